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
-- Patrol hours are app.patrol_hours (0022_patrol_hours.sql).
--
-- The casts are immutable in practice: every stored date carries its zone (the schema
-- requires it), so the session's time zone cannot change the answer.

-- A document's date as a timestamp; null (not an error that would refuse the write) for a
-- text that is not one.
create function app.doc_time(value text) returns timestamptz
language plpgsql immutable parallel safe as $$
begin
    return value::timestamptz;
exception when others then
    return null;
end
$$;

create function app.report_time(doc jsonb) returns timestamptz
language sql immutable parallel safe as $$
    select app.doc_time(coalesce(doc ->> 'date', doc ->> 'timestamp'))
$$;

create function app.report_violation_count(doc jsonb, kind text) returns integer
language sql immutable parallel safe as $$
    select count(*)::integer
      from jsonb_array_elements(case when jsonb_typeof(doc -> 'inspection' -> 'summary' -> 'violations') = 'array'
                                     then doc -> 'inspection' -> 'summary' -> 'violations' else '[]' end) v
     where v ->> 'disposition' in ('Warning', 'Citation')
       and (kind is null or v ->> 'disposition' = kind)
$$;

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

-- Every dashboard aggregate is a range over one agency's boardings by date; what it sums
-- rides in the index, so the aggregates are index-only scans (no document is read).
create index reports_dashboard on sync.reports (partition, boarded_at)
    include (officer_email, warnings, citations, safety_level, lon, lat, violation_codes, catch_species, catch_kg)
    where is_boarding;

-- Duty changes: who (e-mail, lower case; the name for a change without one), when, and the
-- status, so that patrol time is read from an index in each person's order.
alter table sync.duty_changes
    add column duty_who text generated always as (
        coalesce(lower(doc -> 'user' ->> 'email'), (doc -> 'user' -> 'name')::text, '')) stored,
    add column duty_at timestamptz generated always as (app.doc_time(doc ->> 'date')) stored,
    add column duty_status text generated always as (doc ->> 'status') stored;
create index duty_changes_patrol on sync.duty_changes (partition, duty_who, duty_at, id)
    include (duty_status) where not deleted;

-- Patrol time, defined once: the On Duty -> next Off Duty intervals of 0022 (repeated
-- statuses in a row do not start a new interval; an open interval runs up to now),
-- clipped to [from_at, to_at). Hours and days on patrol are both read from it.
create function app.patrol_intervals(agency_key text, user_email text, from_at timestamptz, to_at timestamptz)
returns table (who text, started timestamptz, ended timestamptz)
language sql stable as $$
    with changes as (
        select duty_who as who, duty_at as at, duty_status as status, id
          from sync.duty_changes
         where partition = 'agency=' || agency_key and not deleted and duty_at is not null
           and (user_email is null or duty_who = lower(user_email))
    ), flips as (
        select who, at, status, id, lag(status) over (partition by who order by at, id) as before
          from changes
    ), transitions as (
        select who, at, status, lead(at) over (partition by who order by at, id) as next_at
          from flips
         where before is distinct from status
    )
    select who, greatest(at, from_at), least(coalesce(next_at, now()), to_at)
      from transitions
     where status = 'On Duty' and least(coalesce(next_at, now()), to_at) > greatest(at, from_at)
$$;

create or replace function app.patrol_hours(agency_key text, user_email text, from_at timestamptz, to_at timestamptz)
returns double precision
language sql stable as $$
    select coalesce(sum(extract(epoch from ended - started)), 0)::double precision / 3600
      from app.patrol_intervals(agency_key, user_email, from_at, to_at)
$$;

-- Days on patrol: calendar days (UTC) on which some patrol interval was running.
create function app.patrol_days(agency_key text, user_email text, from_at timestamptz, to_at timestamptz)
returns integer
language sql stable as $$
    select count(distinct day)::integer
      from app.patrol_intervals(agency_key, user_email, from_at, to_at) i,
           generate_series(date_trunc('day', i.started at time zone 'UTC'),
                           (i.ended at time zone 'UTC') - interval '1 microsecond', interval '1 day') day
$$;
