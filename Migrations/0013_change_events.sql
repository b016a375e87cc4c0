-- Change events and presence from streams: the functions and triggers are in
-- repeatable/0013_change_events.sql.

-- Presence from streams (effect 5): a user with an open events stream is On-Line. nchan
-- reports each stream's start and end; the count is per login.
create table app.event_streams (
    login_id uuid primary key references app.logins (id) on delete cascade,
    user_id uuid not null references app.users (id),
    open int not null default 0 check (open >= 0),
    updated_at timestamptz not null default now()
);
alter table app.event_streams enable row level security;
alter table app.event_streams force row level security;
