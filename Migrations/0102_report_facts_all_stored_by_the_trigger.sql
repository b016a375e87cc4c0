-- Write path (issue 22): the last eight generated columns of sync.reports (officer_key,
-- safety_rank, is_draft from 0031; officer_email, safety_level, lon, lat, is_boarding from
-- 0050) become plain columns stored by 0096's facts trigger, which runs for every insert and
-- update anyway. Same values: checked below on every stored row before anything changes.
--
-- Why: a table with stored generated columns pays for them at every INSERT or UPDATE
-- statement, whatever their expressions cost: the executor reads each expression back from
-- its catalog string (`stringToNode`), plans and prepares it (`ExecInitStoredGenerated`),
-- then computes them one by one. That was ~0.04 ms of a lone push's ~1.4 ms in the writing
-- backend (docs/performance/round-07.md, "A lone push's fixed cost, seventh round"). As targets of the
-- trigger's one query (planned once per connection) they cost only their computation.
--
-- Why here and not in a repeatable file: as 0096 says, the stored values are the trigger's,
-- so the columns must never be without it; dropping the expressions and replacing the
-- trigger's function in one transaction leaves no moment a write could miss them.

-- The seven facts of the document alone, each as its generated column wrote it (0031, 0050;
-- safety_rank's integer made smallint as the column stored it). A function of their own,
-- returned as a set like app.report_facts so that PostgreSQL inlines it into the trigger's
-- one query (and the proof's below): 0096's function stays as it is, not written out again.
-- is_boarding also reads the row's `deleted`, so the trigger computes it.
create function app.report_plain_facts(doc jsonb)
returns table (officer_key text, safety_rank smallint, is_draft boolean, officer_email text, safety_level text,
               lon double precision, lat double precision)
language sql immutable parallel safe
begin atomic
    select coalesce(lower(doc #>> '{reportingOfficer,email}'), ''),
           -- Red 3, Amber 2, Green 1, none 0: sorting by it puts the worst first.
           (case doc #>> '{inspection,summary,safetyLevel,level}' when 'Red' then 3 when 'Amber' then 2 when 'Green' then 1 else 0 end)::smallint,
           coalesce(doc ->> 'draft' = 'true', false),
           lower(doc -> 'reportingOfficer' ->> 'email'),
           doc -> 'inspection' -> 'summary' -> 'safetyLevel' ->> 'level',
           case when jsonb_typeof(doc -> 'location' -> 0) = 'number' then (doc -> 'location' ->> 0)::double precision end,
           case when jsonb_typeof(doc -> 'location' -> 1) = 'number' then (doc -> 'location' ->> 1)::double precision end;
end;

-- The proof (as 0096's, in the same transaction, so a difference changes nothing): every
-- stored row's eight generated values equal what the trigger will store. Compared with
-- `is distinct from`, so nulls (lon, lat, officer_email, safety_level) must match too.
set local max_parallel_workers_per_gather = 0;
do $$
declare
    differing bigint;
begin
    select count(*) into differing
      from sync.reports r, app.report_plain_facts(r.doc) f
     where (r.officer_key, r.safety_rank, r.is_draft, r.officer_email, r.safety_level, r.lon, r.lat, r.is_boarding)
           is distinct from
           (f.officer_key, f.safety_rank, f.is_draft, f.officer_email, f.safety_level, f.lon, f.lat,
            not r.deleted and coalesce(r.doc ->> 'draft', 'false') <> 'true');
    if differing > 0 then
        raise exception 'app.report_plain_facts differs from the stored generated columns of % reports', differing;
    end if;
end
$$;

alter table sync.reports
    alter column officer_key drop expression,
    alter column safety_rank drop expression,
    alter column is_draft drop expression,
    alter column officer_email drop expression,
    alter column safety_level drop expression,
    alter column lon drop expression,
    alter column lat drop expression,
    alter column is_boarding drop expression;

-- 0096's trigger function, storing all 22 facts: one query, both functions inlined into it.
-- is_boarding is 0050's expression over the row as the statement leaves it (`deleted`
-- included), as the generated column read it.
create or replace function app.store_report_facts() returns trigger
language plpgsql as $$
begin
    select f.boarded_at, f.vessel_key, f.permit_key, f.captain_key, f.nationality_key, f.violation_count, f.warnings,
           f.citations, f.dispositions, f.violation_codes, f.species, f.catch_species, f.catch_kg, f.search,
           p.officer_key, p.safety_rank, p.is_draft, p.officer_email, p.safety_level, p.lon, p.lat,
           not new.deleted and coalesce(new.doc ->> 'draft', 'false') <> 'true'
      into new.boarded_at, new.vessel_key, new.permit_key, new.captain_key, new.nationality_key, new.violation_count, new.warnings,
           new.citations, new.dispositions, new.violation_codes, new.species, new.catch_species, new.catch_kg, new.search,
           new.officer_key, new.safety_rank, new.is_draft, new.officer_email, new.safety_level, new.lon, new.lat,
           new.is_boarding
      from app.report_facts(new.doc) f, app.report_plain_facts(new.doc) p;
    return new;
end
$$;
