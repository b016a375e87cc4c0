-- Synced documents: one table per collection in schema `sync`, each row one document
-- of one partition. A delete leaves a tombstone (doc null) so that pulls can tell.
--
-- Cursors. Every write takes the partition's clock (app.tick), which bumps a counter in a
-- row that stays locked until the writing transaction ends. So a transaction that got a
-- higher number for a partition cannot commit before one that got a lower number: the
-- numbers become visible in increasing order, and a reader that has seen number n has
-- seen every change numbered up to n. Pulls are index range scans over (partition, seq).
-- The price: writers of one partition queue behind each other's transactions.

create table app.partition_clocks (
    partition text primary key,
    seq bigint not null default 0,
    -- Tombstones numbered up to here were removed by compaction: older cursors must reset.
    compacted_seq bigint not null default 0
);
alter table app.partition_clocks enable row level security;
alter table app.partition_clocks force row level security;

-- The kind of a partition string, or null when it is not one (`agency=`, `user=a=b`, `foo`).
create function app.partition_kind(p text) returns text
language sql immutable as $$
    select case
        when p ~ '^agency=[^=/\\[:cntrl:]]{1,64}$' and substr(p, 8) = btrim(substr(p, 8)) then 'agency'
        when p ~ '^user=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then 'user'
        when p = 'all-users=all-the-users' then 'all-users'
        when p ~ '^conversation=[A-Za-z0-9_-]{1,64}$' then 'conversation'
    end
$$;

create table app.conversations (
    id text primary key check (id ~ '^[A-Za-z0-9_-]{1,64}$'),
    display_name text not null,
    created_by uuid references app.users (id),
    created_at timestamptz not null default now()
);
-- Membership is server-side truth: a user's own document listing a conversation grants nothing.
create table app.conversation_members (
    conversation_id text not null references app.conversations (id),
    user_id uuid not null references app.users (id),
    active boolean not null default true,
    joined_at timestamptz not null default now(),
    left_at timestamptz,
    primary key (conversation_id, user_id)
);
create index conversation_members_user on app.conversation_members (user_id) where active;
alter table app.conversations enable row level security;
alter table app.conversations force row level security;
alter table app.conversation_members enable row level security;
alter table app.conversation_members force row level security;
grant select on app.conversations, app.conversation_members to tideway_worker;
create policy conversations_read on app.conversations for select using (
    exists (select 1 from app.conversation_members m where m.conversation_id = id and m.user_id = app.uid() and m.active));
create policy members_read on app.conversation_members for select using (
    user_id = app.uid() or exists (select 1 from app.conversation_members m
        where m.conversation_id = conversation_members.conversation_id and m.user_id = app.uid() and m.active));

-- Membership checks run as the owner: the policy of conversation_members refers to its
-- own table, and a SECURITY DEFINER function keeps that from recursing.
create function app.is_member(conversation text) returns boolean
language sql stable security definer set search_path = app, pg_temp as $$
    select exists (select 1 from app.conversation_members
                    where conversation_id = conversation and user_id = app.uid() and active)
$$;
drop policy conversations_read on app.conversations;
drop policy members_read on app.conversation_members;
create policy conversations_read on app.conversations for select using (app.is_member(id));
create policy members_read on app.conversation_members for select using (user_id = app.uid() or app.is_member(conversation_id));

-- The partition table of the protocol, in one place. Used by the policies below and by
-- pulls (to answer `forbidden` rather than an empty page).
create function app.can_read(p text) returns boolean
language sql stable security definer set search_path = app, pg_temp as $$
    select case app.partition_kind(p)
        when 'agency' then (app.is_global_admin() or substr(p, 8) = app.agency())
                           and exists (select 1 from app.agencies where key = substr(p, 8))
        when 'user' then substr(p, 6) = app.uid()::text
        when 'all-users' then app.uid() is not null
        when 'conversation' then app.is_member(substr(p, 14))
        else false
    end
$$;

create function app.can_write(p text, collection text) returns boolean
language sql stable security definer set search_path = app, pg_temp as $$
    select case app.partition_kind(p)
        when 'agency' then case
            when collection in ('reports', 'photos', 'dutyChanges') then substr(p, 8) = app.agency()
            when collection in ('menuData', 'mpas') then
                (app.is_global_admin() or (app.role() = 'agencyAdmin' and substr(p, 8) = app.agency()))
                and exists (select 1 from app.agencies where key = substr(p, 8))
            else false end
        when 'user' then collection = 'users' and substr(p, 6) = app.uid()::text
        when 'conversation' then collection = 'chatMessages' and app.is_member(substr(p, 14))
        else false
    end
$$;

-- Takes the partition's clock for this transaction (see the top of this file) and
-- announces the change once the transaction commits (NOTIFY is delivered at commit).
create function app.tick(p text) returns bigint
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    next_seq bigint;
begin
    insert into app.partition_clocks as c (partition, seq) values (p, 1)
        on conflict (partition) do update set seq = c.seq + 1
        returning seq into next_seq;
    perform pg_notify('tideway_changes', p);
    return next_seq;
end
$$;

-- The clock and compaction horizon of partitions the caller may read.
create function app.clocks(ps text[]) returns table (partition text, seq bigint, compacted_seq bigint)
language sql stable security definer set search_path = app, pg_temp as $$
    select c.partition, c.seq, c.compacted_seq from app.partition_clocks c
     where c.partition = any(ps) and app.can_read(c.partition)
$$;

-- One table per collection, all of the same shape.
create function app.create_document_table(name text, collection text) returns void
language plpgsql as $$
begin
    execute format($f$
        create table sync.%1$I (
            id text primary key check (length(id) between 1 and 128),
            partition text not null,
            doc jsonb,
            deleted boolean not null default false,
            seq bigint not null,
            version bigint not null default 1,
            updated_at timestamptz not null default now(),
            updated_by uuid,
            check (deleted = (doc is null))
        );
        create index %2$I on sync.%1$I (partition, seq, id);
        alter table sync.%1$I enable row level security;
        alter table sync.%1$I force row level security;
        comment on table sync.%1$I is %3$L;
    $f$, name, name || '_pull', 'collection ' || collection);
end
$$;

select app.create_document_table('reports', 'reports');
select app.create_document_table('photos', 'photos');
select app.create_document_table('duty_changes', 'dutyChanges');
select app.create_document_table('menu_data', 'menuData');
select app.create_document_table('mpas', 'mpas');
select app.create_document_table('users', 'users');
select app.create_document_table('chatsters', 'chatsters');
select app.create_document_table('chat_messages', 'chatMessages');
drop function app.create_document_table(text, text);

-- Reading: the partition table. Writing: the same rule as app.can_write, spelled out per
-- table so that the policy is cheap to evaluate row by row.
create policy read on sync.reports for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
create policy read on sync.photos for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
create policy read on sync.duty_changes for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
create policy read on sync.menu_data for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
create policy read on sync.mpas for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
create policy read on sync.users for select using (partition = 'user=' || app.uid());
create policy read on sync.chatsters for select using (app.uid() is not null);
create policy read on sync.chat_messages for select using (app.is_member(substr(partition, 14)));

create policy write_insert on sync.reports for insert with check (partition = 'agency=' || app.agency());
create policy write_update on sync.reports for update using (partition = 'agency=' || app.agency()) with check (partition = 'agency=' || app.agency());
create policy write_insert on sync.photos for insert with check (partition = 'agency=' || app.agency());
create policy write_update on sync.photos for update using (partition = 'agency=' || app.agency()) with check (partition = 'agency=' || app.agency());
create policy write_insert on sync.duty_changes for insert with check (partition = 'agency=' || app.agency());
create policy write_update on sync.duty_changes for update using (partition = 'agency=' || app.agency()) with check (partition = 'agency=' || app.agency());
create policy write_insert on sync.menu_data for insert with check (app.can_write(partition, 'menuData'));
create policy write_update on sync.menu_data for update using (app.can_write(partition, 'menuData')) with check (app.can_write(partition, 'menuData'));
create policy write_insert on sync.mpas for insert with check (app.can_write(partition, 'mpas'));
create policy write_update on sync.mpas for update using (app.can_write(partition, 'mpas')) with check (app.can_write(partition, 'mpas'));
-- A user's own document exists from account creation on (server effect 1): update only.
create policy write_update on sync.users for update using (partition = 'user=' || app.uid()) with check (partition = 'user=' || app.uid());
create policy write_insert on sync.chat_messages for insert with check (app.is_member(substr(partition, 14)));
create policy write_update on sync.chat_messages for update using (app.is_member(substr(partition, 14))) with check (app.is_member(substr(partition, 14)));
-- chatsters: no write policy at all; only the server's own functions write it.

grant select, insert, update on sync.reports, sync.photos, sync.duty_changes, sync.menu_data, sync.mpas,
    sync.chat_messages to tideway_worker;
grant select, update on sync.users to tideway_worker;
grant select on sync.chatsters to tideway_worker;

-- What each (user, client, change) came to, so that a retried push writes nothing twice.
create table app.push_log (
    user_id uuid not null,
    client_id text not null,
    change_id text not null,
    result jsonb not null,
    at timestamptz not null default now(),
    primary key (user_id, client_id, change_id)
);
alter table app.push_log enable row level security;
alter table app.push_log force row level security;
grant select, insert on app.push_log to tideway_worker;
create policy own on app.push_log for all using (user_id = app.uid()) with check (user_id = app.uid());

-- The devices that sync, for the inspector (first and last pull and push).
create table app.devices (
    user_id uuid not null references app.users (id),
    client_id text not null,
    app_version text not null default '',
    first_seen timestamptz not null default now(),
    last_pull timestamptz,
    last_push timestamptz,
    primary key (user_id, client_id)
);
alter table app.devices enable row level security;
alter table app.devices force row level security;
grant select, insert, update on app.devices to tideway_worker;
create policy own on app.devices for all using (user_id = app.uid() or app.is_global_admin()) with check (user_id = app.uid());
