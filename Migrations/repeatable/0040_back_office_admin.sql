-- Back office administration, issue 7 (the tables: 0040_back_office_admin.sql).

drop policy if exists audit_insert on app.audit_log;
create policy audit_insert on app.audit_log for insert with check (actor = app.uid());
drop policy if exists audit_read on app.audit_log;
create policy audit_read on app.audit_log for select using (app.is_global_admin());
-- app.account_links has no grants (0040): it is reached only through the functions below.

-- True when the caller may manage this user (the same rule as the users_update policy,
-- for functions that run as the owner and so are not held to it).
create or replace function app.may_manage_user(target uuid) returns boolean
language sql stable security definer set search_path = app, pg_temp as $$
    select exists (
        select 1 from app.users u
         where u.id = target and u.id <> app.uid()
           and (app.is_global_admin() or (app.role() = 'agencyAdmin' and u.agency = app.agency() and u.role <> 'globalAdmin')))
$$;

-- An admin issues a link for a user they manage. Earlier unused links of that user and
-- purpose stop working: only the newest is live.
create or replace function app.issue_account_link(for_user uuid, link_purpose text, link_hash bytea, ttl_seconds int)
returns void
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    if not app.may_manage_user(for_user) then
        raise exception 'not allowed' using errcode = '42501';
    end if;
    update app.account_links set used_at = now() where user_id = for_user and used_at is null;
    insert into app.account_links (hash, user_id, purpose, created_by, expires_at)
        values (link_hash, for_user, link_purpose, app.uid(), now() + make_interval(secs => ttl_seconds));
end
$$;

-- The forgotten-password form: no claims. Issues a reset link only for an active user
-- with that email; answers nothing either way, so the form cannot tell who exists.
create or replace function app.issue_reset_by_email(login_email text, link_hash bytea, ttl_seconds int)
returns uuid
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    found_id uuid;
begin
    select id into found_id from app.users where lower(email) = lower(login_email) and active;
    if found_id is null then
        return null;
    end if;
    update app.account_links set used_at = now() where user_id = found_id and used_at is null;
    insert into app.account_links (hash, user_id, purpose, expires_at)
        values (link_hash, found_id, 'reset', now() + make_interval(secs => ttl_seconds));
    return found_id;
end
$$;

-- What the link page shows before the password is chosen: nothing for a spent, expired
-- or unknown link, or an inactive user.
create or replace function app.peek_account_link(link_hash bytea)
returns table (email text, display_name text, purpose text)
language sql stable security definer set search_path = app, pg_temp as $$
    select u.email, u.display_name, l.purpose
      from app.account_links l join app.users u on u.id = l.user_id
     where l.hash = link_hash and l.used_at is null and l.expires_at > now() and u.active
$$;

-- Spends the link and sets the password. A reset also ends every open login of the user.
-- Answers the user's id, or null when the link is not (or no longer) valid.
create or replace function app.use_account_link(link_hash bytea, new_password_hash text)
returns uuid
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    link app.account_links;
begin
    update app.account_links l set used_at = now()
      from app.users u
     where l.hash = link_hash and l.used_at is null and l.expires_at > now() and u.id = l.user_id and u.active
     returning l.* into link;
    if link.user_id is null then
        return null;
    end if;
    update app.users set password_hash = new_password_hash where id = link.user_id;
    update app.logins set revoked_at = now(), revoked_reason = 'password set by link'
     where user_id = link.user_id and revoked_at is null;
    insert into app.audit_log (actor, actor_email, action, target)
        select link.user_id, u.email, 'account.' || link.purpose || '_used', 'user:' || link.user_id
          from app.users u where u.id = link.user_id;
    return link.user_id;
end
$$;

-- Changing one's own password needs the current one, checked by the worker; this then
-- stores the new hash and ends the user's other logins.
create or replace function app.change_own_password(new_password_hash text)
returns void
language sql security definer set search_path = app, pg_temp as $$
    update app.users set password_hash = new_password_hash where id = app.uid();
    update app.logins set revoked_at = now(), revoked_reason = 'password changed'
     where user_id = app.uid() and revoked_at is null
       and id <> nullif(current_setting('tideway.login_id', true), '')::uuid;
$$;

-- The caller's own password hash, to check the current password on a change.
create or replace function app.own_password_hash() returns text
language sql stable security definer set search_path = app, pg_temp as $$
    select password_hash from app.users where id = app.uid()
$$;

-- Agency admins see their own agency's users' devices (global admins already see all).
drop policy if exists devices_agency_admin on app.devices;
create policy devices_agency_admin on app.devices for select using (
    app.role() = 'agencyAdmin'
    and exists (select 1 from app.users u where u.id = devices.user_id and u.agency = app.agency()));
