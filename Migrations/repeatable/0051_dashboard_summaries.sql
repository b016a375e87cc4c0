-- Dashboards (issue 8): how the daily summaries (0051_dashboard_summaries.sql) are kept.

drop policy if exists read on app.boarding_days;
create policy read on app.boarding_days for select using (partition = any ((select app.readable_agency_partitions())::text[]));
drop policy if exists read on app.officer_days;
create policy read on app.officer_days for select using (partition = any ((select app.readable_agency_partitions())::text[]));
drop policy if exists read on app.tally_days;
create policy read on app.tally_days for select using (partition = any ((select app.readable_agency_partitions())::text[]));

-- The day a boarding counts on; null (counted nowhere, as in the range queries) without a date.
create or replace function app.boarding_day(boarded_at timestamptz) returns date
language sql immutable parallel safe as $$ select (boarded_at at time zone 'UTC')::date $$;

create or replace function app.is_located(lon double precision, lat double precision) returns boolean
language sql immutable parallel safe as $$ select coalesce(lon between -180 and 180 and lat between -90 and 90, false) $$;

-- What the tables must hold, computed from the reports.
create or replace view app.boarding_days_computed as
    select partition, app.boarding_day(boarded_at) as day, coalesce(safety_level, 'Not recorded') as safety_level,
           count(*)::integer as boardings, count(*) filter (where warnings + citations = 0)::integer as compliant,
           sum(warnings)::integer as warnings, sum(citations)::integer as citations,
           count(*) filter (where app.is_located(lon, lat))::integer as located,
           min(lon) filter (where app.is_located(lon, lat)) as west, max(lon) filter (where app.is_located(lon, lat)) as east,
           min(lat) filter (where app.is_located(lon, lat)) as south, max(lat) filter (where app.is_located(lon, lat)) as north
      from sync.reports where is_boarding and boarded_at is not null
     group by 1, 2, 3;

create or replace view app.officer_days_computed as
    select partition, app.boarding_day(boarded_at) as day, coalesce(officer_email, '') as officer_email,
           count(*)::integer as boardings, count(*) filter (where warnings + citations = 0)::integer as compliant,
           sum(warnings)::integer as warnings, sum(citations)::integer as citations,
           count(*) filter (where app.is_located(lon, lat))::integer as located,
           min(lon) filter (where app.is_located(lon, lat)) as west, max(lon) filter (where app.is_located(lon, lat)) as east,
           min(lat) filter (where app.is_located(lon, lat)) as south, max(lat) filter (where app.is_located(lon, lat)) as north
      from sync.reports where is_boarding and boarded_at is not null
     group by 1, 2, 3;

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

-- Adds a statement's deltas to the three tables, one grouped upsert each.
create or replace function app.apply_boarding_deltas(deltas app.boarding_delta[]) returns void
language plpgsql as $$
begin
    with d as (
        select * from unnest(deltas) where day is not null
    ), by_level as (
        insert into app.boarding_days as s
        select partition, day, safety_level, sum(sign), coalesce(sum(sign) filter (where warnings + citations = 0), 0),
               sum(sign * warnings), sum(sign * citations), coalesce(sum(sign) filter (where located), 0),
               min(lon) filter (where located and sign > 0), max(lon) filter (where located and sign > 0),
               min(lat) filter (where located and sign > 0), max(lat) filter (where located and sign > 0)
          from d group by partition, day, safety_level
        on conflict (partition, day, safety_level) do update
           set boardings = s.boardings + excluded.boardings, compliant = s.compliant + excluded.compliant,
               warnings = s.warnings + excluded.warnings, citations = s.citations + excluded.citations,
               located = s.located + excluded.located,
               west = least(s.west, excluded.west), east = greatest(s.east, excluded.east),
               south = least(s.south, excluded.south), north = greatest(s.north, excluded.north)
    ), by_officer as (
        insert into app.officer_days as s
        select partition, day, officer_email, sum(sign), coalesce(sum(sign) filter (where warnings + citations = 0), 0),
               sum(sign * warnings), sum(sign * citations), coalesce(sum(sign) filter (where located), 0),
               min(lon) filter (where located and sign > 0), max(lon) filter (where located and sign > 0),
               min(lat) filter (where located and sign > 0), max(lat) filter (where located and sign > 0)
          from d group by partition, day, officer_email
        on conflict (partition, day, officer_email) do update
           set boardings = s.boardings + excluded.boardings, compliant = s.compliant + excluded.compliant,
               warnings = s.warnings + excluded.warnings, citations = s.citations + excluded.citations,
               located = s.located + excluded.located,
               west = least(s.west, excluded.west), east = greatest(s.east, excluded.east),
               south = least(s.south, excluded.south), north = greatest(s.north, excluded.north)
    )
    insert into app.tally_days as t (partition, day, kind, key, entries, amount)
    select partition, day, kind, key, sum(sign)::integer, sum(sign * amount)
      from (select d.partition, d.day, d.sign, 'code' as kind, c as key, 1::numeric as amount from d, unnest(d.violation_codes) c
            union all
            select d.partition, d.day, d.sign, 'fish', x.species, x.kg::numeric from d, unnest(d.catch_species, d.catch_kg) x(species, kg)) u
     group by partition, day, kind, key
    on conflict (partition, day, kind, key) do update
       set entries = t.entries + excluded.entries, amount = t.amount + excluded.amount;
    -- A boarding taken away from an edge of its day's bounds: the bounds are read again
    -- from what remains (one day of one agency, from the dashboard index).
    update app.boarding_days s
       set (west, east, south, north) = (
           select min(r.lon), max(r.lon), min(r.lat), max(r.lat) from sync.reports r
            where r.partition = s.partition and r.is_boarding
              and r.boarded_at >= s.day::timestamp at time zone 'UTC' and r.boarded_at < (s.day + 1)::timestamp at time zone 'UTC'
              and coalesce(r.safety_level, 'Not recorded') = s.safety_level and app.is_located(r.lon, r.lat))
      from unnest(deltas) gone
     where gone.sign < 0 and gone.located and gone.day is not null
       and s.partition = gone.partition and s.day = gone.day and s.safety_level = gone.safety_level
       and (gone.lon in (s.west, s.east) or gone.lat in (s.south, s.north));
    update app.officer_days s
       set (west, east, south, north) = (
           select min(r.lon), max(r.lon), min(r.lat), max(r.lat) from sync.reports r
            where r.partition = s.partition and r.is_boarding
              and r.boarded_at >= s.day::timestamp at time zone 'UTC' and r.boarded_at < (s.day + 1)::timestamp at time zone 'UTC'
              and coalesce(r.officer_email, '') = s.officer_email and app.is_located(r.lon, r.lat))
      from unnest(deltas) gone
     where gone.sign < 0 and gone.located and gone.day is not null
       and s.partition = gone.partition and s.day = gone.day and s.officer_email = gone.officer_email
       and (gone.lon in (s.west, s.east) or gone.lat in (s.south, s.north));
end
$$;

-- Statement triggers with transition tables: a multi-row write (a push's new reports,
-- app.insert_documents) updates each summary row once, not once per report. An update
-- counts only the reports whose summarized facts changed (most edits — vessel, crew,
-- notes — change none). Runs as the owner: nobody else writes the summaries.
create or replace function app.summarize_boardings() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    deltas app.boarding_delta[];
begin
    if tg_op = 'INSERT' then
        deltas := array(select app.boarding_delta(1, n) from new_rows n where n.is_boarding);
    elsif tg_op = 'DELETE' then
        deltas := array(select app.boarding_delta(-1, o) from old_rows o where o.is_boarding);
    else
        deltas := array(
            select x from old_rows o join new_rows n on n.id = o.id,
                   lateral (values (app.boarding_delta(-1, o)), (app.boarding_delta(1, n))) v(x)
             where (o.is_boarding or n.is_boarding)
               and app.boarding_delta(1, o) is distinct from app.boarding_delta(1, n));
    end if;
    if cardinality(deltas) > 0 then
        perform app.apply_boarding_deltas(deltas);
    end if;
    return null;
end
$$;

create or replace trigger dashboard_summaries_insert after insert on sync.reports
    referencing new table as new_rows for each statement execute function app.summarize_boardings();
create or replace trigger dashboard_summaries_delete after delete on sync.reports
    referencing old table as old_rows for each statement execute function app.summarize_boardings();
create or replace trigger dashboard_summaries_update after update on sync.reports
    referencing old table as old_rows new table as new_rows for each statement execute function app.summarize_boardings();
