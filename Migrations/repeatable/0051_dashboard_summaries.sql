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
      from unnest(deltas) gone
     where gone.sign < 0 and gone.located and gone.day is not null
       and s.partition = gone.partition and s.day = gone.day and s.@key@ = gone.@key@
       and (gone.lon in (s.west, s.east) or gone.lat in (s.south, s.north));$r$, '@table@', s[1]), '@key@', s[2]), '@key_of_r@', s[3]);
    end loop;
    -- Adds a statement's deltas to the three tables, one grouped upsert each; then a
    -- boarding taken away from an edge of its day's bounds has the bounds read again from
    -- what remains (one day of one agency, from the dashboard index).
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
-- answers how many reports changed what they count.
create or replace function app.fold_boarding_summaries(p text) returns integer
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    mark bigint;
    clock bigint;
    changes app.boarding_change[];
    removals bigint[];
begin
    insert into app.summary_watermarks (partition, seq) values (p, 0) on conflict (partition) do nothing;
    select w.seq into mark from app.summary_watermarks w where w.partition = p for update;
    -- One statement, so one snapshot: the reports numbered above the watermark, the noted
    -- removals and the clock. Every change numbered up to that clock is visible in it
    -- (writers of a partition commit in clock order, 0004), so it is the next watermark.
    -- A change is a report whose current version counts otherwise than it did. (Each
    -- candidate's report and contribution are looked up by key, as sub-selects: as joins,
    -- the planner hashed the agency's whole tables for a few dozen candidates.)
    with candidates as (
        select r.id from sync.reports r where r.partition = p and r.seq > mark
        union
        select x.id from app.boarding_removals x where x.partition = p
    ), seen as (
        select k.id,
               (select c.delta from app.boarding_contributions c where c.partition = p and c.id = k.id) as was,
               (select case when r.is_boarding then app.boarding_delta(1, r) end
                  from sync.reports r where r.id = k.id and r.partition = p) as now
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
        delete from app.boarding_contributions c using unnest(changes) f
         where c.partition = p and c.id = f.id and (f.now).sign is null;
        insert into app.boarding_contributions as c (partition, id, delta)
        select p, f.id, f.now from unnest(changes) f where (f.now).sign is not null
        on conflict (partition, id) do update set delta = excluded.delta;
    end if;
    delete from app.boarding_removals where n = any(removals);
    update app.summary_watermarks set seq = greatest(seq, coalesce(clock, 0)) where partition = p;
    return cardinality(changes);
end
$$;

-- Folds every agency partition with changes (or removals) not yet in the summaries, in
-- partition order (so two folds never wait for each other in a cycle); answers how many
-- reports changed what they count. Every partition has a clock (users', teams',
-- conversations'), and partition_kind's regular expressions cost ~20 µs a row: the prefix
-- test first keeps a turn with nothing to fold from costing that for every user of the
-- server (0.69 → 0.06 ms on 31 clocks; docs/performance.md, "The summary fold off the
-- event's tail").
create or replace function app.fold_boarding_summaries() returns integer
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    p text;
    total integer := 0;
begin
    for p in
        select c.partition from app.partition_clocks c
          left join app.summary_watermarks w on w.partition = c.partition
         where c.partition like 'agency=%' and app.partition_kind(c.partition) = 'agency'
           and c.seq > coalesce(w.seq, 0)
        union
        select x.partition from app.boarding_removals x
        order by 1
    loop
        total := total + app.fold_boarding_summaries(p);
    end loop;
    return total;
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
