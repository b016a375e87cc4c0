-- Change events that survive the publisher's restarts (issue 20, defects 2 and 3).
--
-- A NOTIFY reaches only listeners connected at commit: while `tideway events` restarts
-- (killed, or reconnecting after a PostgreSQL restart) a commit's notification is lost.
-- The publisher therefore keeps a position per partition: every few seconds it records
-- the partition clocks (`pending`) and promotes the previous record to `published`, once
-- every notification up to it has been handled. On start it LISTENs first, then publishes
-- one event for every partition whose clock is past `published`: a change committed while
-- it was down still produces its event (a few may be announced twice; events are hints).
create table app.event_positions (
    partition text primary key,
    -- The partition's clock at the last checkpoint.
    pending bigint not null,
    -- The clock at the checkpoint before it: every change up to here has had its event.
    published bigint not null
);
alter table app.event_positions enable row level security;
alter table app.event_positions force row level security;
-- Changes made before this migration had their events (or are long past caring).
insert into app.event_positions (partition, pending, published)
select partition, seq, seq from app.partition_clocks;

-- One checkpoint (the publisher calls it every few seconds, between notifications).
create function app.events_checkpoint() returns void
language sql security definer set search_path = app, pg_temp as $$
    update app.event_positions set published = pending where published < pending;
    insert into app.event_positions as e (partition, pending, published)
    select partition, seq, 0 from app.partition_clocks
    on conflict (partition) do update set pending = excluded.pending where e.pending < excluded.pending;
$$;

-- The partitions to announce on start: changed past their published position (a
-- partition without one is newer than the last checkpoint).
create function app.events_to_catch_up() returns setof text
language sql stable security definer set search_path = app, pg_temp as $$
    select c.partition
      from app.partition_clocks c
      left join app.event_positions e on e.partition = c.partition
     where c.seq > coalesce(e.published, 0)
$$;

-- Streams that must close: open streams (as counted for presence) of logins revoked, or of
-- deactivated users, in the last day. The publisher closes them on start and every few
-- seconds, so a revocation whose notification it missed still closes them.
create function app.revoked_stream_channels() returns setof text
language sql stable security definer set search_path = app, pg_temp as $$
    select 'l' || replace(s.login_id::text, '-', '')
      from app.event_streams s
      join app.logins l on l.id = s.login_id
      join app.users u on u.id = l.user_id
     where s.open > 0
       and ((l.revoked_at is not null and l.revoked_at > now() - interval '1 day') or not u.active)
$$;
