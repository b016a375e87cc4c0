-- run as superuser: roles and the schema need it. Every later file runs as tideway_owner,
-- so what it creates is owned by the owner role.
-- Roles. The owner owns every table and the few SECURITY DEFINER functions that must
-- see across rules (signing in, token checks). The worker logs in, owns nothing, has no
-- BYPASSRLS, and reaches rows only through the policies (Migrations/repeatable/).
do $$
begin
    if not exists (select from pg_roles where rolname = 'tideway_owner') then
        create role tideway_owner nologin bypassrls;
    end if;
    if not exists (select from pg_roles where rolname = 'tideway_worker') then
        create role tideway_worker login nobypassrls;
    end if;
end
$$;

create schema if not exists app authorization tideway_owner;
grant usage on schema app to tideway_worker;
-- Synced documents live in their own schema (see 0004).
create schema if not exists sync authorization tideway_owner;
grant usage on schema sync to tideway_worker;
revoke create on schema public from public;

-- Functions are private unless granted; the worker may call what the owner creates.
alter default privileges for role tideway_owner revoke execute on functions from public;
alter default privileges for role tideway_owner in schema app grant execute on functions to tideway_worker;
set local role tideway_owner;

-- The caller's claims, set once per transaction by app.authenticate() (or, for work
-- that no user starts, by the server's own jobs). Unset means: nobody, see nothing.
create function app.uid() returns uuid
    language sql stable as $$ select nullif(current_setting('tideway.user_id', true), '')::uuid $$;
create function app.role() returns text
    language sql stable as $$ select coalesce(nullif(current_setting('tideway.role', true), ''), 'none') $$;
create function app.agency() returns text
    language sql stable as $$ select nullif(current_setting('tideway.agency', true), '') $$;
create function app.is_global_admin() returns boolean
    language sql stable as $$ select app.role() = 'globalAdmin' $$;

-- Server-side settings the worker needs (secrets for cursors and CSRF), readable only
-- through a function so that the table itself stays private.
create table app.settings (
    key text primary key,
    value text not null
);
alter table app.settings enable row level security;
alter table app.settings force row level security;
