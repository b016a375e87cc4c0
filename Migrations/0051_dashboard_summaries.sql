-- Dashboards (issue 8): daily summaries of each agency's boardings, kept by the write
-- path. A report's write adds its contribution (the facts of 0050) to the rows of its UTC
-- day and takes the old contribution away, in the writing transaction, so a dashboard
-- reads a few hundred small rows instead of every boarding of the range and is never
-- stale after a write. The date range of a dashboard is whole UTC days (DateRange.swift),
-- so sums of days answer it exactly.
--
-- Concurrency: every write of a report ticks its partition's clock first (app.tick in
-- the INSERT/UPDATE itself), which stays locked until commit, so only one transaction at
-- a time changes a partition's summary rows: no lost updates, no deadlocks between them.
--
-- The rows' definitions are the *_computed views below (the same sums, straight from the
-- reports); the migration fills the tables from them and the tests compare the two.

-- Per agency, day and safety level: the counts of the agency charts.
create table app.boarding_days (
    partition text not null,
    day date not null,
    safety_level text not null,
    boardings integer not null,
    compliant integer not null,
    warnings integer not null,
    citations integer not null,
    located integer not null,
    -- Bounds of the located boardings (for fitting the map); null when none.
    west double precision, east double precision, south double precision, north double precision,
    primary key (partition, day, safety_level)
);

-- Per agency, day and officer (by e-mail, lower case; '' for a report without one):
-- the officers chart and each officer's own dashboard.
create table app.officer_days (
    partition text not null,
    day date not null,
    officer_email text not null,
    boardings integer not null,
    compliant integer not null,
    warnings integer not null,
    citations integer not null,
    located integer not null,
    west double precision, east double precision, south double precision, north double precision,
    primary key (partition, day, officer_email)
);

-- Per agency and day: violations by code ('code': entries = violations) and catch by
-- species ('fish': amount = kilograms). Numeric, so that adding and taking away is exact.
create table app.tally_days (
    partition text not null,
    day date not null,
    kind text not null check (kind in ('code', 'fish')),
    key text not null,
    entries integer not null,
    amount numeric not null,
    primary key (partition, day, kind, key)
);

-- Same reading rule as the reports: one's own agency, or every agency for global admins.
alter table app.boarding_days enable row level security;
alter table app.boarding_days force row level security;
alter table app.officer_days enable row level security;
alter table app.officer_days force row level security;
alter table app.tally_days enable row level security;
alter table app.tally_days force row level security;
create policy read on app.boarding_days for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
create policy read on app.officer_days for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
create policy read on app.tally_days for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
grant select on app.boarding_days, app.officer_days, app.tally_days to tideway_worker;

-- The day a boarding counts on; null (counted nowhere, as in the range queries) without a date.
create function app.boarding_day(boarded_at timestamptz) returns date
language sql immutable parallel safe as $$ select (boarded_at at time zone 'UTC')::date $$;

create function app.is_located(lon double precision, lat double precision) returns boolean
language sql immutable parallel safe as $$ select coalesce(lon between -180 and 180 and lat between -90 and 90, false) $$;

-- What the tables must hold, computed from the reports.
create view app.boarding_days_computed as
    select partition, app.boarding_day(boarded_at) as day, coalesce(safety_level, 'Not recorded') as safety_level,
           count(*)::integer as boardings, count(*) filter (where warnings + citations = 0)::integer as compliant,
           sum(warnings)::integer as warnings, sum(citations)::integer as citations,
           count(*) filter (where app.is_located(lon, lat))::integer as located,
           min(lon) filter (where app.is_located(lon, lat)) as west, max(lon) filter (where app.is_located(lon, lat)) as east,
           min(lat) filter (where app.is_located(lon, lat)) as south, max(lat) filter (where app.is_located(lon, lat)) as north
      from sync.reports where is_boarding and boarded_at is not null
     group by 1, 2, 3;

create view app.officer_days_computed as
    select partition, app.boarding_day(boarded_at) as day, coalesce(officer_email, '') as officer_email,
           count(*)::integer as boardings, count(*) filter (where warnings + citations = 0)::integer as compliant,
           sum(warnings)::integer as warnings, sum(citations)::integer as citations,
           count(*) filter (where app.is_located(lon, lat))::integer as located,
           min(lon) filter (where app.is_located(lon, lat)) as west, max(lon) filter (where app.is_located(lon, lat)) as east,
           min(lat) filter (where app.is_located(lon, lat)) as south, max(lat) filter (where app.is_located(lon, lat)) as north
      from sync.reports where is_boarding and boarded_at is not null
     group by 1, 2, 3;

create view app.tally_days_computed as
    select r.partition, app.boarding_day(r.boarded_at) as day, t.kind, t.key, sum(t.entries)::integer as entries, sum(t.amount) as amount
      from sync.reports r,
           lateral (select 'code', c, 1, 1::numeric from unnest(r.violation_codes) c
                    union all
                    select 'fish', x.species, 1, x.kg::numeric from unnest(r.catch_species, r.catch_kg) x(species, kg)) t(kind, key, entries, amount)
     where r.is_boarding and r.boarded_at is not null
     group by 1, 2, 3, 4;

-- Adds (sign 1) or takes away (sign -1) one report's contribution.
create function app.count_boarding(r sync.reports, sign integer) returns void
language plpgsql set search_path = app, pg_temp as $$
declare
    d date := app.boarding_day(r.boarded_at);
    level text := coalesce(r.safety_level, 'Not recorded');
    email text := coalesce(r.officer_email, '');
    here boolean := app.is_located(r.lon, r.lat);
    fit double precision[] := case when here and sign > 0 then array[r.lon, r.lon, r.lat, r.lat] end;
begin
    if not r.is_boarding or d is null then
        return;
    end if;
    insert into app.boarding_days as s
    values (r.partition, d, level, sign, case when r.warnings + r.citations = 0 then sign else 0 end,
            sign * r.warnings, sign * r.citations, case when here then sign else 0 end, fit[1], fit[2], fit[3], fit[4])
    on conflict (partition, day, safety_level) do update
       set boardings = s.boardings + excluded.boardings, compliant = s.compliant + excluded.compliant,
           warnings = s.warnings + excluded.warnings, citations = s.citations + excluded.citations,
           located = s.located + excluded.located,
           west = least(s.west, excluded.west), east = greatest(s.east, excluded.east),
           south = least(s.south, excluded.south), north = greatest(s.north, excluded.north);
    insert into app.officer_days as s
    values (r.partition, d, email, sign, case when r.warnings + r.citations = 0 then sign else 0 end,
            sign * r.warnings, sign * r.citations, case when here then sign else 0 end, fit[1], fit[2], fit[3], fit[4])
    on conflict (partition, day, officer_email) do update
       set boardings = s.boardings + excluded.boardings, compliant = s.compliant + excluded.compliant,
           warnings = s.warnings + excluded.warnings, citations = s.citations + excluded.citations,
           located = s.located + excluded.located,
           west = least(s.west, excluded.west), east = greatest(s.east, excluded.east),
           south = least(s.south, excluded.south), north = greatest(s.north, excluded.north);
    -- A boarding taken away from an edge of the bounds: the day's bounds are read again
    -- from what remains (one day of one agency, from the dashboard index).
    if here and sign < 0 then
        update app.boarding_days s
           set (west, east, south, north) = (
               select min(lon), max(lon), min(lat), max(lat) from sync.reports
                where partition = r.partition and is_boarding
                  and boarded_at >= d::timestamp at time zone 'UTC' and boarded_at < (d + 1)::timestamp at time zone 'UTC'
                  and coalesce(safety_level, 'Not recorded') = level and app.is_located(lon, lat))
         where s.partition = r.partition and s.day = d and s.safety_level = level
           and (r.lon in (s.west, s.east) or r.lat in (s.south, s.north));
        update app.officer_days s
           set (west, east, south, north) = (
               select min(lon), max(lon), min(lat), max(lat) from sync.reports
                where partition = r.partition and is_boarding
                  and boarded_at >= d::timestamp at time zone 'UTC' and boarded_at < (d + 1)::timestamp at time zone 'UTC'
                  and coalesce(officer_email, '') = email and app.is_located(lon, lat))
         where s.partition = r.partition and s.day = d and s.officer_email = email
           and (r.lon in (s.west, s.east) or r.lat in (s.south, s.north));
    end if;
    insert into app.tally_days as t (partition, day, kind, key, entries, amount)
    select r.partition, d, kind, key, sign * sum(entries)::integer, sign * sum(amount)
      from (select 'code' as kind, c as key, 1 as entries, 1::numeric as amount from unnest(r.violation_codes) c
            union all
            select 'fish', x.species, 1, x.kg::numeric from unnest(r.catch_species, r.catch_kg) x(species, kg)) u
     group by kind, key
    on conflict (partition, day, kind, key) do update
       set entries = t.entries + excluded.entries, amount = t.amount + excluded.amount;
end
$$;

-- Runs as the owner: the summaries are written by no one else (workers may only read).
create function app.summarize_boarding() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    if tg_op in ('UPDATE', 'DELETE') then
        perform app.count_boarding(old, -1);
    end if;
    if tg_op in ('UPDATE', 'INSERT') then
        perform app.count_boarding(new, 1);
    end if;
    return null;
end
$$;

create trigger dashboard_summaries_insert after insert on sync.reports
    for each row when (new.is_boarding) execute function app.summarize_boarding();
create trigger dashboard_summaries_delete after delete on sync.reports
    for each row when (old.is_boarding) execute function app.summarize_boarding();
-- Most edits (vessel, crew, notes) change none of the summarized facts: skipped.
create trigger dashboard_summaries_update after update on sync.reports
    for each row when ((old.is_boarding, old.boarded_at, old.officer_email, old.safety_level, old.warnings, old.citations,
                        old.violation_codes, old.catch_species, old.catch_kg, old.lon, old.lat, old.partition)
                       is distinct from
                       (new.is_boarding, new.boarded_at, new.officer_email, new.safety_level, new.warnings, new.citations,
                        new.violation_codes, new.catch_species, new.catch_kg, new.lon, new.lat, new.partition))
    execute function app.summarize_boarding();

-- What the dashboards still read from the reports (the map's points, newest first, and
-- bins; an officer's recent boardings) is a range of one agency's boardings by date: the
-- index of 0050 now carries only that, with `id` as a key so that "newest first" is an
-- index order and a LIMIT stops early.
drop index sync.reports_dashboard;
create index reports_dashboard on sync.reports (partition, boarded_at, id)
    include (officer_email, safety_level, lon, lat) where is_boarding;

insert into app.boarding_days select * from app.boarding_days_computed;
insert into app.officer_days select * from app.officer_days_computed;
insert into app.tally_days select * from app.tally_days_computed;
