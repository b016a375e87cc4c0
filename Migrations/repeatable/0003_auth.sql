-- Sign-in, tokens and logins (the tables: 0003_auth.sql). The worker has no grants on
-- those tables: it reaches them only through the functions below, which run as the owner
-- and do one narrow thing each.

-- Checks a token and sets the caller's claims for this transaction. This is the first
-- statement of every authenticated request. Fails with 28000 when the token is unknown,
-- expired, spent, or its login was revoked or its user deactivated, through app.refuse
-- (repeatable/0100): an expected refusal, without an ERROR line in PostgreSQL's log.
-- One query (pgbench on the 2-core benchmark machine: 9,500 -> 11,600 calls/s against the
-- earlier two).
-- One row, not RETURNS TABLE (issue 22, docs/performance/round-03.md "Idle polls, third round"): a
-- set-returning function is materialized in a tuplestore and, called from PL/pgSQL
-- (app.unchanged), is a full query with its executor started for every call; returning one
-- row through its OUT parameters, `perform app.authenticate(…)` is a simple expression,
-- and `select * from app.authenticate(…)` still answers the one row. Each claim is set by
-- its own `perform` for the same reason (one `perform` of four calls is a query).
--
-- Self-contained whatever shape the function has in the database (Migrations/README.md,
-- "Going back"): a function's result (here its OUT parameters), its parameters' names and
-- defaults cannot be replaced in place (SQLSTATE 42P13), so the definition is tried as a
-- `create or replace` and, only when the one in the database has another shape (the set
-- the release before issue 22 returned, or whatever a later release makes of it), dropped
-- and created again. Re-applied over itself it replaces in place: no drop, so a worker's
-- prepared statement and concurrent sign-ins never see the function missing. The drop
-- takes nothing else with it: no view or SQL-standard body depends on it, the worker's
-- EXECUTE grant comes back with the owner's default privileges (0001).
do $do$
declare
    definition constant text := $definition$
create or replace function app.authenticate(token_hash bytea, token_kind text default 'access',
    out user_id uuid, out email text, out display_name text, out role text, out agency text, out login_id uuid)
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    select u.id, u.email, u.display_name, u.role, u.agency, l.id
      into user_id, email, display_name, role, agency, login_id
      from app.tokens t
      join app.logins l on l.id = t.login_id
      join app.users u on u.id = l.user_id
     where t.hash = token_hash and t.kind = token_kind and t.expires_at > now()
       and l.revoked_at is null and u.active;
    if not found then
        perform app.refuse('28000', 'unauthenticated');
    end if;
    perform set_config('tideway.user_id', user_id::text, true);
    perform set_config('tideway.role', role, true);
    perform set_config('tideway.agency', coalesce(agency, ''), true);
    perform set_config('tideway.login_id', login_id::text, true);
end
$$
$definition$;
begin
    begin
        execute definition;
    exception when invalid_function_definition then
        drop function app.authenticate(bytea, text);
        execute definition;
    end;
end
$do$;

-- What sign-in needs to check a password: nothing for an unknown or inactive user.
create or replace function app.password_of(login_email text)
returns table (user_id uuid, password_hash text)
language sql stable security definer set search_path = app, pg_temp as $$
    select id, password_hash from app.users where lower(email) = lower(login_email) and active
$$;

-- Seconds until this email or address may try again (0: go ahead): each key has its own
-- limit of failures within the window.
create or replace function app.login_retry_after(email_key text, address_key text, email_max int, address_max int, window_s int)
returns int
language sql stable security definer set search_path = app, pg_temp as $$
    select coalesce(max(greatest(1, ceil(extract(epoch from (oldest + make_interval(secs => window_s) - now())))::int)), 0)
      from (select key, min(at) as oldest, count(*) as n
              from app.login_failures
             where key in (email_key, address_key) and at > now() - make_interval(secs => window_s)
             group by key) f
     where (key = email_key and n >= email_max) or (key = address_key and n >= address_max)
$$;

create or replace function app.note_login_failure(keys text[])
returns void
language sql security definer set search_path = app, pg_temp as $$
    delete from app.login_failures where at < now() - interval '1 day';
    insert into app.login_failures (key) select unnest(keys);
$$;

-- Opens a login for a user whose password the worker has just checked, with its first
-- tokens; clears the failures of that email.
create or replace function app.open_login(
    for_user uuid, login_kind text, login_device text, failure_key text,
    first_hash bytea, first_kind text, first_ttl int, second_hash bytea, second_kind text, second_ttl int)
returns uuid
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    new_login uuid;
begin
    insert into app.logins (user_id, kind, device) values (for_user, login_kind, coalesce(login_device, ''))
        returning id into new_login;
    insert into app.tokens (hash, login_id, kind, expires_at)
        values (first_hash, new_login, first_kind, now() + make_interval(secs => first_ttl));
    if second_hash is not null then
        insert into app.tokens (hash, login_id, kind, expires_at)
            values (second_hash, new_login, second_kind, now() + make_interval(secs => second_ttl));
    end if;
    update app.users set last_login_at = now() where id = for_user;
    delete from app.login_failures where key = failure_key;
    return new_login;
end
$$;

-- Rotates a refresh token. Answers 'ok' with the user's id, 'invalid' for an unknown or
-- expired token, and 'reused' when a spent token comes back: then the whole login is
-- revoked (the caller must commit, so the revocation is not rolled back).
create or replace function app.rotate_refresh(
    old_hash bytea, new_access bytea, access_ttl int, new_refresh bytea, refresh_ttl int)
returns table (outcome text, user_id uuid)
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    t app.tokens;
    owner_id uuid;
begin
    select * into t from app.tokens where hash = old_hash and kind = 'refresh' for update;
    if not found then
        return query select 'invalid', null::uuid;
        return;
    end if;
    select l.user_id into owner_id from app.logins l join app.users u on u.id = l.user_id
     where l.id = t.login_id and l.revoked_at is null and u.active;
    if owner_id is null or t.expires_at <= now() then
        return query select 'invalid', null::uuid;
        return;
    end if;
    if t.spent_at is not null then
        update app.logins set revoked_at = now(), revoked_reason = 'refresh token reused' where id = t.login_id;
        return query select 'reused', owner_id;
        return;
    end if;
    update app.tokens set spent_at = now() where hash = old_hash;
    -- The access tokens issued before stop working: only the newest pair is live.
    delete from app.tokens where login_id = t.login_id and kind = 'access';
    insert into app.tokens (hash, login_id, kind, expires_at) values
        (new_access, t.login_id, 'access', now() + make_interval(secs => access_ttl)),
        (new_refresh, t.login_id, 'refresh', now() + make_interval(secs => refresh_ttl));
    return query select 'ok', owner_id;
end
$$;

-- Ends the caller's own login (logout). Runs after app.authenticate in the same transaction.
create or replace function app.close_login()
returns void
language sql security definer set search_path = app, pg_temp as $$
    update app.logins set revoked_at = now(), revoked_reason = 'logout'
     where id = nullif(current_setting('tideway.login_id', true), '')::uuid;
$$;

-- Deactivating a user ends their logins too (the active flag alone already stops them;
-- this keeps the record of why).
create or replace function app.users_after_deactivate() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    if old.active and not new.active then
        update app.logins set revoked_at = now(), revoked_reason = 'deactivated'
         where user_id = new.id and revoked_at is null;
    end if;
    return new;
end
$$;
create or replace trigger users_after_deactivate after update of active on app.users
    for each row execute function app.users_after_deactivate();

-- The server's secrets (cursor signing, CSRF), for the worker only.
create or replace function app.server_secret(secret_name text) returns text
language sql stable security definer set search_path = app, pg_temp as $$
    select value from app.settings where key = secret_name
$$;
