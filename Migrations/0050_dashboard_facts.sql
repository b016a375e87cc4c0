-- Dashboards (issue 8): the derived facts of domain.md, defined ONCE here, as immutable
-- functions of a report document, and kept on every report row as stored generated
-- columns, so that they are never stale after a write and the aggregates read small
-- columns (and an index) instead of whole documents.
--
--   violation  = an element of inspection.summary.violations whose disposition is
--                'Warning' or 'Citation' (an empty disposition is not a violation);
--   compliant  = a boarding with no violation; compliance rate = compliant / boardings;
--   boarding date = the report's `date` (when the boarding happened), else `timestamp`;
--   catch weight = actualCatch[].weight in kilograms (lbs converted: 1 lb = 0.45359237 kg).
--   Drafts and deleted reports are not boardings.
-- Patrol hours and days are app.patrol_hours and app.patrol_days (repeatable/0050).
--
-- The casts are immutable in practice: every stored date carries its zone (the schema
-- requires it), so the session's time zone cannot change the answer. A document's date as
-- a timestamp is app.iso_time (0031); a violation count is app.report_violation_count (0031).

create function app.report_violation_codes(doc jsonb) returns text[]
language sql immutable parallel safe as $$
    select coalesce(array_agg(coalesce(nullif(v -> 'offence' ->> 'code', ''), '(no code)')), '{}')
      from jsonb_array_elements(case when jsonb_typeof(doc -> 'inspection' -> 'summary' -> 'violations') = 'array'
                                     then doc -> 'inspection' -> 'summary' -> 'violations' else '[]' end) v
     where v ->> 'disposition' in ('Warning', 'Citation')
$$;

-- The boarding's catch per species: names (sorted) and kilograms, as parallel arrays
-- (arrays sum much faster than JSON objects).
create function app.report_catch(doc jsonb) returns table (fish text, kg double precision)
language sql immutable parallel safe as $$
    select c ->> 'fish',
           sum(case when lower(c ->> 'unit') in ('lb', 'lbs', 'pound', 'pounds')
                    then (c ->> 'weight')::double precision * 0.45359237
                    else (c ->> 'weight')::double precision end)
      from jsonb_array_elements(case when jsonb_typeof(doc -> 'inspection' -> 'actualCatch') = 'array'
                                     then doc -> 'inspection' -> 'actualCatch' else '[]' end) c
     where coalesce(c ->> 'fish', '') <> '' and jsonb_typeof(c -> 'weight') = 'number'
     group by 1 order by 1
$$;

create function app.report_catch_species(doc jsonb) returns text[]
language sql immutable parallel safe as $$ select coalesce(array_agg(fish order by fish), '{}') from app.report_catch(doc) $$;

create function app.report_catch_kg(doc jsonb) returns double precision[]
language sql immutable parallel safe as $$ select coalesce(array_agg(kg order by fish), '{}') from app.report_catch(doc) $$;

-- `boarded_at` (the boarding's date) comes from 0031, which computes it the same way.
alter table sync.reports
    add column officer_email text generated always as (lower(doc -> 'reportingOfficer' ->> 'email')) stored,
    add column warnings integer generated always as (app.report_violation_count(doc, 'Warning')) stored,
    add column citations integer generated always as (app.report_violation_count(doc, 'Citation')) stored,
    add column violation_codes text[] generated always as (app.report_violation_codes(doc)) stored,
    add column safety_level text generated always as (doc -> 'inspection' -> 'summary' -> 'safetyLevel' ->> 'level') stored,
    add column catch_species text[] generated always as (app.report_catch_species(doc)) stored,
    add column catch_kg double precision[] generated always as (app.report_catch_kg(doc)) stored,
    add column lon double precision generated always as (
        case when jsonb_typeof(doc -> 'location' -> 0) = 'number' then (doc -> 'location' ->> 0)::double precision end) stored,
    add column lat double precision generated always as (
        case when jsonb_typeof(doc -> 'location' -> 1) = 'number' then (doc -> 'location' ->> 1)::double precision end) stored,
    add column is_boarding boolean generated always as (not deleted and coalesce(doc ->> 'draft', 'false') <> 'true') stored;

-- What the dashboards read from the reports themselves (the map's points, newest first,
-- and bins; an officer's recent boardings) is a range of one agency's boardings by date,
-- with `id` as a key so that "newest first" is an index order and a LIMIT stops early.
-- The sums come from the daily summaries (0051).
create index reports_dashboard on sync.reports (partition, boarded_at, id)
    include (officer_email, safety_level, lon, lat) where is_boarding;

-- Duty changes: who (e-mail, lower case; the name for a change without one), when, and the
-- status, so that patrol time is read from an index in each person's order.
alter table sync.duty_changes
    add column duty_who text generated always as (
        coalesce(lower(doc -> 'user' ->> 'email'), (doc -> 'user' -> 'name')::text, '')) stored,
    add column duty_at timestamptz generated always as (app.iso_time(doc ->> 'date')) stored,
    add column duty_status text generated always as (doc ->> 'status') stored;
create index duty_changes_patrol on sync.duty_changes (partition, duty_who, duty_at, id)
    include (duty_status) where not deleted;
