-- Write path (issue 22): the dashboards' daily summaries (0051) are no longer kept by a
-- trigger in the writing transaction (~0.5 ms of PostgreSQL CPU per push) but folded in
-- batches by the job runner (`tideway jobs`, app.fold_boarding_summaries in
-- repeatable/0051), within about a second of the write.
--
-- How a fold knows what to count without a per-change queue on the insert: every write of
-- a report ticks its partition's clock (0004), whose row stays locked until the writer
-- commits, so a partition's changes become visible in clock order. A fold of a partition
-- reads, in one snapshot, the reports numbered above the partition's watermark and the
-- clock itself; everything numbered up to that clock is then visible, so the clock becomes
-- the new watermark and nothing committed later can be numbered below it. What each report
-- adds to the summaries is remembered (app.boarding_contributions), so a fold adds only
-- the difference between a report's current version and what it already counted: edits,
-- drafts made final, tombstones and versions skipped in between all come out right.
-- Removing a row (compaction, an operator) leaves no seq to find: a statement trigger notes
-- the ids (app.boarding_removals), and the fold takes their contributions away.

-- One report's change as a fold sees it: what it counted (null: nothing), what it counts now.
create type app.boarding_change as (id text, was app.boarding_delta, now app.boarding_delta);

-- Per report (boardings only): the contribution, with sign 1, now in the summaries.
create table app.boarding_contributions (
    partition text not null,
    id text not null,
    delta app.boarding_delta not null,
    primary key (partition, id)
);

-- Per agency partition: every report change numbered up to `seq` is in the summaries.
create table app.summary_watermarks (
    partition text primary key,
    seq bigint not null
);

-- Reports removed (not tombstoned) whose contribution a fold has still to take away.
create table app.boarding_removals (
    n bigserial primary key,
    partition text not null,
    id text not null
);
create index boarding_removals_partition on app.boarding_removals (partition);

-- Only the owner's functions read or write these (no policy: the worker sees nothing).
alter table app.boarding_contributions enable row level security;
alter table app.boarding_contributions force row level security;
alter table app.summary_watermarks enable row level security;
alter table app.summary_watermarks force row level security;
alter table app.boarding_removals enable row level security;
alter table app.boarding_removals force row level security;

-- The triggers go (repeatable/0051 no longer creates them). Dropping them locks
-- sync.reports against writers until this migration commits, so the contributions and
-- watermarks below are those of exactly the summaries the triggers kept.
drop trigger if exists dashboard_summaries_insert on sync.reports;
drop trigger if exists dashboard_summaries_update on sync.reports;
drop trigger if exists dashboard_summaries_delete on sync.reports;

insert into app.summary_watermarks (partition, seq)
select partition, seq from app.partition_clocks where app.partition_kind(partition) = 'agency';

-- app.boarding_delta is a repeatable function: absent (and no report to count) when this
-- runs on an empty database before any repeatable file.
do $do$
begin
    if to_regprocedure('app.boarding_delta(integer, sync.reports)') is not null then
        execute $$
            insert into app.boarding_contributions (partition, id, delta)
            select r.partition, r.id, app.boarding_delta(1, r) from sync.reports r where r.is_boarding $$;
    end if;
end
$do$;
