-- An agency admin keeps their own agency's contact details (description, email, site) up
-- to date; its name and active state (and the key, which never changes) stay with global
-- admins (0002). Row-level security decides rows, not columns, so a trigger refuses an
-- agency admin's change to the other columns, whatever code path sends it.
drop policy if exists agencies_update_own on app.agencies;
create policy agencies_update_own on app.agencies for update
    using (app.role() = 'agencyAdmin' and key = app.agency())
    with check (app.role() = 'agencyAdmin' and key = app.agency());

create or replace function app.guard_agency_update() returns trigger
language plpgsql as $$
begin
    if app.role() = 'agencyAdmin' and (new.key, new.name, new.active) is distinct from (old.key, old.name, old.active) then
        perform app.refuse('TW403', 'only global administrators change an agency''s name or state');
    end if;
    return new;
end
$$;

create or replace trigger agencies_guard before update on app.agencies
    for each row execute function app.guard_agency_update();