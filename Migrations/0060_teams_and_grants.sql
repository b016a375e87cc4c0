-- Teams and grants (issue 17): partitions `team=<id>` opened only by those given a right
-- to them. A team is a group of officers (a boat's crew, a joint task force across
-- agencies); its partition holds `tasks` and `teamNotes`. A grant gives one right on one
-- partition to one user, to everyone signed in, or to everyone of an agency; the rights
-- are ordered (read 1 < write 2 < manage 3) and each includes the ones below.
-- Functions and policies: repeatable/0004_sync_documents.sql (the read and write rules,
-- next to the other partition kinds') and repeatable/0060_teams_and_grants.sql.

-- The partition grammar gains `team=<uuid>` (lower-case, as PostgreSQL prints a uuid). The
-- other kinds answer as before, so the checks of app.agencies and app.conversations, which
-- call this function, hold unchanged for every stored row.
create or replace function app.partition_kind(p text) returns text
language sql immutable parallel safe as $$
    select case
        when p ~ '^agency=[A-Za-z0-9 ._\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F\u1E00-\u1EFF-]{1,64}$'
         and p !~ '^agency= | $' then 'agency'
        when p ~ '^user=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then 'user'
        when p = 'all-users=all-the-users' then 'all-users'
        when p ~ '^conversation=[A-Za-z0-9_-]{1,64}$' then 'conversation'
        when p ~ '^team=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then 'team'
    end
$$;

create table app.teams (
    id uuid primary key default gen_random_uuid(),
    -- The agency that owns the team: its admins manage it. Members may come from any agency.
    agency text not null references app.agencies (key),
    name text not null check (length(name) between 1 and 200),
    description text not null default '' check (length(description) <= 2000),
    -- An archived team's partition stays readable but nobody writes it.
    archived boolean not null default false,
    created_by uuid references app.users (id),
    created_at timestamptz not null default now()
);
create index teams_agency on app.teams (agency);
alter table app.teams enable row level security;
alter table app.teams force row level security;
grant select on app.teams to tideway_worker;

create table app.grants (
    partition text not null check (app.partition_kind(partition) = 'team'),
    grantee_kind text not null check (grantee_kind in ('user', 'everyone', 'agency')),
    -- A user's id (as text), an agency's key, or '' for everyone.
    grantee text not null,
    "right" text not null check ("right" in ('read', 'write', 'manage')),
    rank smallint generated always as (case "right" when 'read' then 1 when 'write' then 2 else 3 end) stored,
    granted_by uuid,
    granted_at timestamptz not null default now(),
    primary key (partition, grantee_kind, grantee),
    check (case grantee_kind when 'everyone' then grantee = '' when 'user' then grantee ~ '^[0-9a-f-]{36}$'
                             else length(grantee) between 1 and 64 end)
);
-- A caller's own grants (the read policy of the team collections: once per query).
create index grants_grantee on app.grants (grantee, grantee_kind, partition) include (rank);
alter table app.grants enable row level security;
alter table app.grants force row level security;
-- Written only through app.set_grant / app.revoke_grant (repeatable/0060).
grant select on app.grants to tideway_worker;

-- The team collections, and the agency's own copy of a task it assigns to a team.
alter table app.collections drop constraint collections_partition_kind_check;
alter table app.collections add constraint collections_partition_kind_check
    check (partition_kind in ('agency', 'user', 'all-users', 'conversation', 'team'));
alter table app.collections drop constraint collections_write_rule_check;
alter table app.collections add constraint collections_write_rule_check
    check (write_rule in ('agency-members', 'agency-admins', 'own-user', 'conversation-members', 'team-writers', 'server'));
alter table app.collections drop constraint collections_check;
alter table app.collections add constraint collections_check
    check (case write_rule when 'agency-members' then partition_kind = 'agency' when 'agency-admins' then partition_kind = 'agency'
                           when 'own-user' then partition_kind = 'user' when 'conversation-members' then partition_kind = 'conversation'
                           when 'team-writers' then partition_kind = 'team'
                           else true end);

insert into app.collections (name, table_name, partition_kind, write_rule) values
    ('tasks', 'tasks', 'team', 'team-writers'),
    ('teamNotes', 'team_notes', 'team', 'team-writers'),
    ('agencyTasks', 'agency_tasks', 'agency', 'agency-admins');
select app.create_document_table(name) from app.collections where name in ('tasks', 'teamNotes', 'agencyTasks') order by name;
