-- The event publisher's positions (table in 0081_events_catch_up.sql): see there for why.

-- One checkpoint (the publisher calls it every few seconds, between notifications).
create or replace function app.events_checkpoint() returns void
language sql security definer set search_path = app, pg_temp as $$
    update app.event_positions set published = pending where published < pending;
    insert into app.event_positions as e (partition, pending, published)
    select partition, seq, 0 from app.partition_clocks
    on conflict (partition) do update set pending = excluded.pending where e.pending < excluded.pending;
$$;

-- The partitions to announce on start: changed past their published position (a
-- partition without one is newer than the last checkpoint).
create or replace function app.events_to_catch_up() returns setof text
language sql stable security definer set search_path = app, pg_temp as $$
    select c.partition
      from app.partition_clocks c
      left join app.event_positions e on e.partition = c.partition
     where c.seq > coalesce(e.published, 0)
$$;

-- Streams that must close: open streams (as counted for presence) of logins revoked, or of
-- deactivated users, in the last day. The publisher closes them on start and every few
-- seconds, so a revocation whose notification it missed still closes them.
create or replace function app.revoked_stream_channels() returns setof text
language sql stable security definer set search_path = app, pg_temp as $$
    select 'l' || replace(s.login_id::text, '-', '')
      from app.event_streams s
      join app.logins l on l.id = s.login_id
      join app.users u on u.id = l.user_id
     where s.open > 0
       and ((l.revoked_at is not null and l.revoked_at > now() - interval '1 day') or not u.active)
$$;
