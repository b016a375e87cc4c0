-- Who reads and writes agencies and users (the tables: 0002_agencies_and_users.sql).

-- Every signed-in user may read agencies (names for pickers); only global admins write.
drop policy if exists agencies_read on app.agencies;
create policy agencies_read on app.agencies for select using (app.uid() is not null);
drop policy if exists agencies_insert on app.agencies;
create policy agencies_insert on app.agencies for insert with check (app.is_global_admin());
drop policy if exists agencies_update on app.agencies;
create policy agencies_update on app.agencies for update using (app.is_global_admin()) with check (app.is_global_admin());

-- A user sees their own row; agency admins their agency's users; global admins everyone.
drop policy if exists users_read on app.users;
create policy users_read on app.users for select using (
    id = app.uid() or app.is_global_admin() or (app.role() = 'agencyAdmin' and agency = app.agency()));
-- Agency admins manage their own agency's officers and admins, never global admins.
drop policy if exists users_insert on app.users;
create policy users_insert on app.users for insert with check (
    app.is_global_admin() or (app.role() = 'agencyAdmin' and agency = app.agency() and role <> 'globalAdmin'));
drop policy if exists users_update on app.users;
create policy users_update on app.users for update
    using (id = app.uid() or app.is_global_admin() or (app.role() = 'agencyAdmin' and agency = app.agency() and role <> 'globalAdmin'))
    with check (id = app.uid() or app.is_global_admin() or (app.role() = 'agencyAdmin' and agency = app.agency() and role <> 'globalAdmin'));

-- Nobody changes their own role or agency; the policies alone cannot compare old and new.
create or replace function app.users_guard() returns trigger language plpgsql as $$
begin
    if new.id = app.uid() and (new.role is distinct from old.role or new.agency is distinct from old.agency) then
        raise exception 'nobody edits their own role or agency' using errcode = '42501';
    end if;
    if new.email is distinct from old.email and new.id <> app.uid() and not app.is_global_admin()
       and app.role() <> 'agencyAdmin' then
        raise exception 'email change not allowed' using errcode = '42501';
    end if;
    return new;
end
$$;
create or replace trigger users_guard before update on app.users for each row execute function app.users_guard();
