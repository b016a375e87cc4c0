-- The grammar of partition strings, in one place: the kind of a partition, or null when
-- it is not one (`agency=`, `agency= x`, `user=A…`, `foo`). Agency keys are 1–64 letters,
-- digits, spaces, `.`, `_` or `-`, neither starting nor ending with a space; a letter is
-- one of the Latin script, precomposed (A–Z, a–z, U+00C0–U+024F but × and ÷, U+1E00–
-- U+1EFF: `Parque Nacional Galápagos`), a digit is 0–9. Explicit code points, not
-- [:alpha:], so that no database locale changes the answer and Swift's `Partition` can
-- say exactly the same: PartitionGrammarTests holds both to one table of tricky strings.
-- User partitions name a user's id as PostgreSQL prints it; conversation ids are 1–64
-- ASCII letters, digits, `_` or `-`. Immutable, and used by the agency key's check below,
-- so it is schema (Migrations/README.md): a change to it is a new ordered migration.
create function app.partition_kind(p text) returns text
language sql immutable parallel safe as $$
    select case
        when p ~ '^agency=[A-Za-z0-9 ._\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u024F\u1E00-\u1EFF-]{1,64}$'
         and p !~ '^agency= | $' then 'agency'
        when p ~ '^user=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then 'user'
        when p = 'all-users=all-the-users' then 'all-users'
        when p ~ '^conversation=[A-Za-z0-9_-]{1,64}$' then 'conversation'
    end
$$;

create table app.agencies (
    -- The immutable partition key (`agency=<key>`); `name` is what people see.
    key text primary key check (app.partition_kind('agency=' || key) = 'agency'),
    name text not null check (length(name) between 1 and 200),
    description text not null default '',
    email text not null default '',
    site text not null default '',
    active boolean not null default true,
    created_at timestamptz not null default now()
);

create table app.users (
    id uuid primary key default gen_random_uuid(),
    email text not null check (email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 254),
    first_name text not null default '',
    last_name text not null default '',
    display_name text not null default '',
    agency text references app.agencies (key),
    role text not null check (role in ('officer', 'agencyAdmin', 'globalAdmin')),
    active boolean not null default true,
    password_hash text,
    created_at timestamptz not null default now(),
    last_login_at timestamptz,
    -- When the user last synced or held an event stream (presence, 0013).
    last_active_at timestamptz,
    -- Officers and agency admins belong to an agency; a global admin or a chat-only
    -- officer may have none.
    check (role <> 'agencyAdmin' or agency is not null)
);
create unique index users_email_key on app.users (lower(email));
create index users_agency on app.users (agency);

alter table app.agencies enable row level security;
alter table app.agencies force row level security;
alter table app.users enable row level security;
alter table app.users force row level security;

grant select, insert, update on app.agencies to tideway_worker;
grant select, insert, update on app.users to tideway_worker;
