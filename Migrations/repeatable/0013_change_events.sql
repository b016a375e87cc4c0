-- Change events (sync-protocol.md, "Change events"). nginx's nchan module holds the
-- event streams; `tideway events` publishes each commit notification (tideway_changes)
-- to the partition's channel. Every stream also listens on its login's own channel, which
-- the publisher deletes when that login may have lost a partition: nchan then closes the
-- stream, and the client's reconnect is authorized afresh (403 for what it lost).

-- The logins of a user as nchan channel ids ("l" + the login id without dashes).
create or replace function app.login_channels(for_user uuid) returns text
language sql stable security definer set search_path = app, pg_temp as $$
    select string_agg('l' || replace(id::text, '-', ''), ',') from app.logins
     where user_id = for_user and revoked_at is null
$$;

-- Also recorded (0082): the publisher must not carry a later change to these streams.
create or replace function app.notify_revoked(channels text) returns void
language sql security definer set search_path = app, pg_temp as $$
    insert into app.stream_revocations (channels) select channels where channels is not null;
    select pg_notify('tideway_revoked', channels) where channels is not null
$$;

create or replace function app.logins_after_revoke() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    perform app.notify_revoked('l' || replace(new.id::text, '-', ''));
    return null;
end
$$;
create or replace trigger logins_after_revoke after update of revoked_at on app.logins
    for each row when (old.revoked_at is null and new.revoked_at is not null)
    execute function app.logins_after_revoke();

-- Moved to another agency, role changed, deactivated: the streams re-authorize.
create or replace function app.users_after_rights_change() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    perform app.notify_revoked(app.login_channels(new.id));
    return null;
end
$$;
create or replace trigger users_after_rights_change after update of agency, role, active on app.users
    for each row when (old.agency is distinct from new.agency or old.role is distinct from new.role
                       or old.active is distinct from new.active)
    execute function app.users_after_rights_change();

-- Left a conversation: the same.
create or replace function app.members_after_leave() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    perform app.notify_revoked(app.login_channels(new.user_id));
    return null;
end
$$;
create or replace trigger members_after_leave after update of active on app.conversation_members
    for each row when (old.active and not new.active) execute function app.members_after_leave();

create or replace function app.mark_online(who uuid) returns void
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    update app.users set last_active_at = now() where id = who;
    update sync.users set doc = doc || '{"presence": "On-Line"}', seq = app.tick(partition), version = version + 1,
                          updated_at = now()
     where id = who::text and doc->>'presence' = 'Off-Line';
end
$$;

-- Presence (effect 5): On-Line while the user synced in the last 60 s or holds an event
-- stream, Off-Line after, unless the user chose Hidden. The worker touches a user at most
-- every few seconds.
create or replace function app.touch_presence() returns void
language sql security definer set search_path = app, pg_temp as $$
    select app.mark_online(app.uid())
$$;

-- `channel` is the stream's first channel: its login's ("l" + 32 hex digits).
create or replace function app.event_stream_changed(channel text, delta int) returns void
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    login uuid;
    who uuid;
begin
    if channel !~ '^l[0-9a-f]{32}$' then
        return;
    end if;
    login := substr(channel, 2)::uuid;
    select user_id into who from app.logins where id = login;
    if who is null then
        return;
    end if;
    insert into app.event_streams as s (login_id, user_id, open) values (login, who, greatest(delta, 0))
        on conflict (login_id) do update set open = greatest(s.open + delta, 0), updated_at = now();
    if delta > 0 then
        perform app.mark_online(who);
    else
        update app.users set last_active_at = now() where id = who;
    end if;
end
$$;

-- Idle users go Off-Line unless they hold a stream. A count not updated for a day is
-- taken as dead (nginx restarted without reporting the ends).
create or replace function app.sweep_presence(idle_seconds int default 60) returns int
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    n int;
begin
    with idle as (
        select d.id, u.last_active_at from sync.users d join app.users u on u.id::text = d.id
         where d.doc->>'presence' = 'On-Line'
           and (u.last_active_at is null or u.last_active_at < now() - make_interval(secs => idle_seconds))
           and not exists (select 1 from app.event_streams s
                            where s.user_id = u.id and s.open > 0 and s.updated_at > now() - interval '1 day')
         order by d.id for update of d skip locked)
    update sync.users d
       set doc = d.doc || jsonb_build_object('presence', 'Off-Line',
                   'lastSeenAt', to_char(coalesce(idle.last_active_at, now()) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
           seq = app.tick(d.partition), version = d.version + 1, updated_at = now()
      from idle where idle.id = d.id;
    get diagnostics n = row_count;
    return n;
end
$$;
