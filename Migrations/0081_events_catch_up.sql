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
-- Its functions (checkpoint, catch-up, revoked streams): repeatable/0081_events_catch_up.sql.
