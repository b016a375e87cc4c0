-- Dashboards (issue 8): how the daily summaries (0051_dashboard_summaries.sql) are kept.

-- Read with the reports' rule: one's own agency, or every agency for global admins.
do $do$
declare
    t text;
begin
    foreach t in array array['app.boarding_days', 'app.officer_days', 'app.tally_days'] loop
        execute format('drop policy if exists read on %s', t);
        execute format('create policy read on %s for select using (partition = any ((select app.readable_agency_partitions())::text[]))', t);
    end loop;
end
$do$;

-- The day a boarding counts on; null (counted nowhere, as in the range queries) without a date.
create or replace function app.boarding_day(boarded_at timestamptz) returns date
language sql immutable parallel safe as $$ select (boarded_at at time zone 'UTC')::date $$;

create or replace function app.is_located(lon double precision, lat double precision) returns boolean
language sql immutable parallel safe as $$ select coalesce(lon between -180 and 180 and lat between -90 and 90, false) $$;

-- What the tables must hold, computed from the reports (the views of app.boarding_days and
-- app.officer_days are written below with their part of app.apply_boarding_deltas).
create or replace view app.tally_days_computed as
    select r.partition, app.boarding_day(r.boarded_at) as day, t.kind, t.key, sum(t.entries)::integer as entries, sum(t.amount) as amount
      from sync.reports r,
           lateral (select 'code', c, 1, 1::numeric from unnest(r.violation_codes) c
                    union all
                    select 'fish', x.species, 1, x.kg::numeric from unnest(r.catch_species, r.catch_kg) x(species, kg)) t(kind, key, entries, amount)
     where r.is_boarding and r.boarded_at is not null
     group by 1, 2, 3, 4;

create or replace function app.boarding_delta(sign integer, r sync.reports) returns app.boarding_delta
language sql immutable as $$
    select row(sign, r.partition, case when r.is_boarding then app.boarding_day(r.boarded_at) end,
               coalesce(r.safety_level, 'Not recorded'), coalesce(r.officer_email, ''), r.warnings, r.citations,
               app.is_located(r.lon, r.lat), r.lon, r.lat, r.violation_codes, r.catch_species, r.catch_kg)::app.boarding_delta
$$;

-- app.boarding_days and app.officer_days hold the same sums of an agency's day, grouped by
-- another key: the safety level, the officer. Each one's view (what it must hold), upsert
-- and bounds repair is written out from one template per piece for the list below (table,
-- key column, that key of a report `r`); app.apply_boarding_deltas stays static SQL.
do $do$
declare
    summaries constant text[][] := array[
        ['boarding_days', 'safety_level', $$coalesce(r.safety_level, 'Not recorded')$$],
        ['officer_days', 'officer_email', $$coalesce(r.officer_email, '')$$]];
    s text[];
    upserts text := '';
    repairs text := '';
    function_text text;
begin
    foreach s slice 1 in array summaries loop
        execute replace(replace(replace($v$
            create or replace view app.@table@_computed as
                select r.partition, app.boarding_day(r.boarded_at) as day, @key_of_r@ as @key@,
                       count(*)::integer as boardings, count(*) filter (where r.warnings + r.citations = 0)::integer as compliant,
                       sum(r.warnings)::integer as warnings, sum(r.citations)::integer as citations,
                       count(*) filter (where app.is_located(r.lon, r.lat))::integer as located,
                       min(r.lon) filter (where app.is_located(r.lon, r.lat)) as west, max(r.lon) filter (where app.is_located(r.lon, r.lat)) as east,
                       min(r.lat) filter (where app.is_located(r.lon, r.lat)) as south, max(r.lat) filter (where app.is_located(r.lon, r.lat)) as north
                  from sync.reports r where r.is_boarding and r.boarded_at is not null
                 group by 1, 2, 3 $v$, '@table@', s[1]), '@key@', s[2]), '@key_of_r@', s[3]);
        upserts := upserts || replace(replace($u$, by_@key@ as (
        insert into app.@table@ as s
        select partition, day, @key@, sum(sign), coalesce(sum(sign) filter (where warnings + citations = 0), 0),
               sum(sign * warnings), sum(sign * citations), coalesce(sum(sign) filter (where located), 0),
               min(lon) filter (where located and sign > 0), max(lon) filter (where located and sign > 0),
               min(lat) filter (where located and sign > 0), max(lat) filter (where located and sign > 0)
          from d group by partition, day, @key@
        on conflict (partition, day, @key@) do update
           set boardings = s.boardings + excluded.boardings, compliant = s.compliant + excluded.compliant,
               warnings = s.warnings + excluded.warnings, citations = s.citations + excluded.citations,
               located = s.located + excluded.located,
               west = least(s.west, excluded.west), east = greatest(s.east, excluded.east),
               south = least(s.south, excluded.south), north = greatest(s.north, excluded.north)
    )$u$, '@table@', s[1]), '@key@', s[2]);
        repairs := repairs || replace(replace(replace($r$
    update app.@table@ s
       set (west, east, south, north) = (
           select min(r.lon), max(r.lon), min(r.lat), max(r.lat) from sync.reports r
            where r.partition = s.partition and r.is_boarding
              and r.boarded_at >= s.day::timestamp at time zone 'UTC' and r.boarded_at < (s.day + 1)::timestamp at time zone 'UTC'
              and @key_of_r@ = s.@key@ and app.is_located(r.lon, r.lat))
      from (select partition, day, @key@, min(lon) as west, max(lon) as east, min(lat) as south, max(lat) as north
              from unnest(deltas) where sign < 0 and located and day is not null
             group by partition, day, @key@) gone
     where s.partition = gone.partition and s.day = gone.day and s.@key@ = gone.@key@
       and (gone.west <= s.west or gone.east >= s.east or gone.south <= s.south or gone.north >= s.north);$r$, '@table@', s[1]), '@key@', s[2]), '@key_of_r@', s[3]);
    end loop;
    -- Adds a statement's deltas to the three tables, one grouped upsert each; then a
    -- boarding taken away from an edge of its day's bounds has the bounds read again from
    -- what remains (one day of one agency, from the dashboard index), once per summary row
    -- whatever the number of boardings taken from it: the removals' extremes of a row reach
    -- its bounds exactly when one of them lies on an edge (a counted boarding lies within).
    -- (Read again per boarding taken away, a mass deletion of copies of one boarding cost
    -- seconds: 2,000 removals × 3,000 boardings of the day; docs/performance/round-12.md, "The summary
    -- fold after a mass deletion".)
    execute replace(replace($f$
create or replace function app.apply_boarding_deltas(deltas app.boarding_delta[]) returns void
language plpgsql as $$
begin
    with d as (
        select * from unnest(deltas) where day is not null
    )@upserts@
    insert into app.tally_days as t (partition, day, kind, key, entries, amount)
    select partition, day, kind, key, sum(sign)::integer, sum(sign * amount)
      from (select d.partition, d.day, d.sign, 'code' as kind, c as key, 1::numeric as amount from d, unnest(d.violation_codes) c
            union all
            select d.partition, d.day, d.sign, 'fish', x.species, x.kg::numeric from d, unnest(d.catch_species, d.catch_kg) x(species, kg)) u
     group by partition, day, kind, key
    on conflict (partition, day, kind, key) do update
       set entries = t.entries + excluded.entries, amount = t.amount + excluded.amount;@repairs@
end
$$ $f$, '@upserts@', upserts), '@repairs@', repairs);
end
$do$;

-- The summaries are folded in batches off the write path (0087): by the job runner about
-- every half second, or by whoever needs them exact now (tests). A fold of one agency
-- partition holds its watermark row until it commits, so folds of a partition run one
-- after the other; writers never wait for a fold, nor a fold for writers.
drop trigger if exists dashboard_summaries_insert on sync.reports;
drop trigger if exists dashboard_summaries_update on sync.reports;
drop trigger if exists dashboard_summaries_delete on sync.reports;
drop function if exists app.summarize_boardings();

create or replace function app.negated(d app.boarding_delta) returns app.boarding_delta
language plpgsql immutable strict as $$
begin
    d.sign := -d.sign;
    return d;
end
$$;

-- Folds one agency partition's report changes since its watermark into the summaries;
-- answers how many reports changed what they count. (Never compiled by JIT: the job runner's
-- session has `jit = off`, Migrations/0114.)
create or replace function app.fold_boarding_summaries(p text) returns integer
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    mark bigint;
    clock bigint;
    changes app.boarding_change[];
    removals bigint[];
    gone text[];
begin
    insert into app.summary_watermarks (partition, seq) values (p, 0) on conflict (partition) do nothing;
    select w.seq into mark from app.summary_watermarks w where w.partition = p for update;
    -- One statement, so one snapshot: the reports numbered above the watermark, the noted
    -- removals and the clock. Every change numbered up to that clock is visible in it
    -- (writers of a partition commit in clock order, 0004), so it is the next watermark.
    -- A change is a report whose current version counts otherwise than it did. (Each
    -- candidate's report and contribution are looked up by key, as sub-selects: as joins,
    -- the planner hashed the agency's whole tables for a few dozen candidates.)
    -- (The report is found by its key alone and its partition tested after: with the
    -- partition in the index condition the planner took the pull index, reading the
    -- partition's whole range for each removed id. `seen` is materialized, so each lookup
    -- runs once, not once for the filter and again for the aggregate.)
    with candidates as (
        select r.id from sync.reports r where r.partition = p and r.seq > mark
        union
        select x.id from app.boarding_removals x where x.partition = p
    ), seen as materialized (
        select k.id,
               (select c.delta from app.boarding_contributions c where c.partition = p and c.id = k.id) as was,
               (select case when r.partition = p and r.is_boarding then app.boarding_delta(1, r) end
                  from sync.reports r where r.id = k.id) as now
          from candidates k
    )
    select (select c.seq from app.partition_clocks c where c.partition = p),
           array(select x.n from app.boarding_removals x where x.partition = p),
           coalesce(array_agg(row(s.id, s.was, s.now)::app.boarding_change) filter (where s.was is distinct from s.now), '{}')
      into clock, removals, changes
      from seen s;

    if cardinality(changes) > 0 then
        perform app.apply_boarding_deltas(array(
            select d from unnest(changes) f, lateral (values (app.negated(f.was)), (f.now)) v(d) where (d).sign is not null));
        -- (A delta's sign is never null: `(d).sign is null` says "counts nothing", whatever
        -- its other fields hold.)
        -- (By key from an array variable, a constant to the planner: as a join with unnest,
        -- it rescanned the changes for each of the agency's contributions, 5,000 × 2,000
        -- after a mass deletion; with the array a sub-select's, it searched the array
        -- element by element for each.)
        gone := array(select f.id from unnest(changes) f where (f.now).sign is null);
        delete from app.boarding_contributions c where c.partition = p and c.id = any(gone);
        insert into app.boarding_contributions as c (partition, id, delta)
        select p, f.id, f.now from unnest(changes) f where (f.now).sign is not null
        on conflict (partition, id) do update set delta = excluded.delta;
    end if;
    delete from app.boarding_removals where n = any(removals);
    update app.summary_watermarks set seq = greatest(seq, coalesce(clock, 0)) where partition = p;
    return cardinality(changes);
end
$$;

-- The agency partitions with changes (or removals) not yet in the summaries; a fold of every
-- one of them, in partition order (so two folds never wait for each other in a cycle),
-- answers how many reports changed what they count. Every partition has a clock (users',
-- teams', conversations'), and partition_kind's regular expressions cost ~20 µs a row: the
-- prefix test first keeps a turn with nothing to fold from costing that for every user of
-- the server (0.69 → 0.06 ms on 31 clocks; docs/performance/round-11.md, "The summary fold off the
-- event's tail").
-- partition_kind's test comes last, for the clocks ahead of their watermark only (offset 0
-- keeps the planner from moving it down to every agency clock: ~10 µs each, most of an
-- idle check's cost). Union all: `exists` over it stops at the first row (the job runner's
-- idle check below).
create or replace view app.summaries_behind as
    select b.partition from (
        select c.partition from app.partition_clocks c
          left join app.summary_watermarks w on w.partition = c.partition
         where c.partition like 'agency=%' and c.seq > coalesce(w.seq, 0)
        offset 0) b
     where app.partition_kind(b.partition) = 'agency'
    union all
    select x.partition from app.boarding_removals x;

create or replace function app.fold_boarding_summaries() returns integer
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    p text;
    total integer := 0;
begin
    for p in select distinct b.partition from app.summaries_behind b order by 1 loop
        total := total + app.fold_boarding_summaries(p);
    end loop;
    return total;
end
$$;

-- The job runner's turn is this one statement when there is nothing to do (JobRunner): is a
-- job due, is any summary behind? Before, an idle turn ran two transactions of four
-- statements each, ~1 ms of its backend's CPU every half second (docs/performance/round-12.md, "The
-- summary fold after a mass deletion").
-- (PL/pgSQL, whose plans a session keeps: a SQL function's body is planned at every call,
-- which cost as much as the two transactions it replaces.)
create or replace function app.job_runner_work(out jobs_due boolean, out fold_due boolean)
language plpgsql stable security definer set search_path = app, pg_temp as $$
begin
    jobs_due := exists (select from app.due_jobs);
    fold_due := exists (select from app.summaries_behind);
end
$$;

-- A removed row leaves no seq for a fold to find: note it, unless its last version is
-- already folded and counts nothing (a tombstone that compaction removes).
create or replace function app.note_report_removals() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    insert into app.boarding_removals (partition, id)
    select o.partition, o.id from old_rows o
     where app.partition_kind(o.partition) = 'agency'
       and (o.is_boarding or o.seq > coalesce((select w.seq from app.summary_watermarks w where w.partition = o.partition), 0));
    return null;
end
$$;

create or replace trigger dashboard_summaries_removals after delete on sync.reports
    referencing old table as old_rows for each statement execute function app.note_report_removals();
