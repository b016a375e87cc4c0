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

create table app.conversations (
    id text primary key check (app.partition_kind('conversation=' || id) = 'conversation'),
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
    -- Unread messages of this member (chat, 0011): server-side truth that the member's
    -- `users` document renders.
    unread int not null default 0 check (unread >= 0),
    primary key (conversation_id, user_id)
);
create index conversation_members_user on app.conversation_members (user_id) where active;
alter table app.conversations enable row level security;
alter table app.conversations force row level security;
alter table app.conversation_members enable row level security;
alter table app.conversation_members force row level security;
grant select on app.conversations, app.conversation_members to tideway_worker;

-- The collections of the protocol, in one place: the table each lives in, the kind of
-- partition its documents live in, and who writes it. The per-table SQL (the tables and
-- their grants here; policies, app.apply_change, app.can_write, app.document_table and
-- the per-table unions in Migrations/repeatable/) is generated from these rows, and
-- Swift's `SyncCollection` is held to them by CollectionCatalogTests.
--   agency-members: the agency's users write (reports, photos, duty changes);
--   agency-admins: the agency's admins and global admins (menus, protected areas);
--   own-user: the user updates their own document, which the server creates;
--   conversation-members: active members of the conversation;
--   server: only the server's own functions write.
create table app.collections (
    name text primary key check (name ~ '^[a-z][A-Za-z]{0,62}$'),
    table_name text not null unique check (table_name ~ '^[a-z][a-z_]{0,62}$'),
    partition_kind text not null check (partition_kind in ('agency', 'user', 'all-users', 'conversation')),
    write_rule text not null check (write_rule in ('agency-members', 'agency-admins', 'own-user', 'conversation-members', 'server')),
    check (case write_rule when 'agency-members' then partition_kind = 'agency' when 'agency-admins' then partition_kind = 'agency'
                           when 'own-user' then partition_kind = 'user' when 'conversation-members' then partition_kind = 'conversation'
                           else true end)
);
-- A catalog, not data: no row-level security, the worker reads it and nobody writes it.
grant select on app.collections to tideway_worker;

insert into app.collections (name, table_name, partition_kind, write_rule) values
    ('reports', 'reports', 'agency', 'agency-members'),
    ('photos', 'photos', 'agency', 'agency-members'),
    ('dutyChanges', 'duty_changes', 'agency', 'agency-members'),
    ('menuData', 'menu_data', 'agency', 'agency-admins'),
    ('mpas', 'mpas', 'agency', 'agency-admins'),
    ('users', 'users', 'user', 'own-user'),
    ('chatsters', 'chatsters', 'all-users', 'server'),
    ('chatMessages', 'chat_messages', 'conversation', 'conversation-members');

-- One table per collection, all of the same shape; the worker's table rights follow the
-- write rule (what it may do is then narrowed by the policies). A later migration that
-- adds a collection inserts its row and calls this.
create function app.create_document_table(collection text) returns void
language plpgsql as $$
declare
    c app.collections;
begin
    select * into strict c from app.collections where name = collection;
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
        grant %4$s on sync.%1$I to tideway_worker;
    $f$, c.table_name, c.table_name || '_pull', 'collection ' || c.name,
        case c.write_rule when 'server' then 'select' when 'own-user' then 'select, update' else 'select, insert, update' end);
end
$$;
revoke execute on function app.create_document_table(text) from tideway_worker;

select app.create_document_table(name) from app.collections order by name;

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
create index push_log_at on app.push_log (at desc);

-- The devices that sync, for the inspector (first and last pull and push).
create table app.devices (
    user_id uuid not null references app.users (id),
    client_id text not null,
    app_version text not null default '',
    first_seen timestamptz not null default now(),
    last_pull timestamptz,
    last_push timestamptz,
    -- Where the device's cursors stood after its last pull that named it (0043): per
    -- partition, the seq up to which it has every change.
    pulled_through jsonb,
    primary key (user_id, client_id)
);
alter table app.devices enable row level security;
alter table app.devices force row level security;
grant select, insert, update on app.devices to tideway_worker;
