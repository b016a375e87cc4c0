create table app.agencies (
    -- The immutable partition key (`agency=<key>`); `name` is what people see.
    key text primary key
        check (length(key) between 1 and 64 and key !~ '[=/\\[:cntrl:]]' and key = btrim(key)),
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

-- Every signed-in user may read agencies (names for pickers); only global admins write.
create policy agencies_read on app.agencies for select using (app.uid() is not null);
create policy agencies_insert on app.agencies for insert with check (app.is_global_admin());
create policy agencies_update on app.agencies for update using (app.is_global_admin()) with check (app.is_global_admin());

-- A user sees their own row; agency admins their agency's users; global admins everyone.
create policy users_read on app.users for select using (
    id = app.uid() or app.is_global_admin() or (app.role() = 'agencyAdmin' and agency = app.agency()));
-- Agency admins manage their own agency's officers and admins, never global admins.
create policy users_insert on app.users for insert with check (
    app.is_global_admin() or (app.role() = 'agencyAdmin' and agency = app.agency() and role <> 'globalAdmin'));
create policy users_update on app.users for update
    using (id = app.uid() or app.is_global_admin() or (app.role() = 'agencyAdmin' and agency = app.agency() and role <> 'globalAdmin'))
    with check (id = app.uid() or app.is_global_admin() or (app.role() = 'agencyAdmin' and agency = app.agency() and role <> 'globalAdmin'));

-- Nobody changes their own role or agency; the policies alone cannot compare old and new.
create function app.users_guard() returns trigger language plpgsql as $$
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
create trigger users_guard before update on app.users for each row execute function app.users_guard();
