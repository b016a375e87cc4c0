-- Write path (issue 22): the report facts that need a function (0031, 0050) computed by ONE
-- function in one pass over the document, and stored by a BEFORE trigger instead of as
-- stored generated columns. Same values: checked below on every stored row before anything
-- changes.
--
-- Why: PostgreSQL computes each generated column on its own, so a report's INSERT ran seven
-- PL/pgSQL fact functions whose eleven queries walked the same arrays again (the violations
-- five times: the three counts, the dispositions, the codes; the catch twice), each query an
-- executor start and stop (docs/performance/round-06.md, "PostgreSQL's CPU per created report").
-- A generated column cannot read another, so one function returning every fact can only
-- feed the columns from a trigger. `app.report_facts` is one query: one pass over each
-- array, every violation fact from one aggregation.
--
-- Why the trigger lives here and not in a repeatable file: the stored values are computed by
-- it, like a generated column's expression, so changing it means recomputing the stored rows
-- (a new ordered migration), and the columns must never be without it: dropping the
-- expressions and creating the trigger in one transaction leaves no moment in which a write
-- could store a report without its facts (repeatable files run in a later transaction).
--
-- The columns computed by plain expressions (officer_key, safety_rank, is_draft,
-- officer_email, safety_level, lon, lat, is_boarding) stay generated: they cost no function
-- call. Dropping an expression keeps the stored values and rewrites nothing.

create type app.report_facts as (
    boarded_at timestamptz, vessel_key text, permit_key text, captain_key text, nationality_key text,
    violation_count integer, warnings integer, citations integer, dispositions text[], violation_codes text[],
    species text[], catch_species text[], catch_kg double precision[], search tsvector);

-- domain.md's derived facts of a report document (0050's header defines them): a violation is
-- a finding whose disposition is 'Warning' or 'Citation'; the boarding date is `date`, else
-- `timestamp`; catch weights in kilograms (1 lb = 0.45359237 kg). The search text is the
-- vessel name, permit number, captain and crew names and licenses, every finding's code,
-- explanation and crew member, and the notes, folded (unaccent, lower case) with punctuation
-- made space: the parser would read `CR-2023-01234` as `cr`, `-2023` and `-01234`, and the
-- search for `2023` would miss it. Each aggregate keeps the form (and so the order, and the
-- float sums) of the function it replaces.
--
-- One row, returned as a set so that PostgreSQL inlines it into the trigger's query (and the
-- proof's below): the trigger then runs one statement, planned once per connection, and
-- PL/pgSQL has no expression of its own to prepare. Both matter for a lone push, one report
-- per transaction: PL/pgSQL prepares each of a function's simple expressions again in every
-- transaction, and versions of this function written as PL/pgSQL (one query and assignments:
-- ~20 expressions; loops over the arrays: ~50) made a lone push 0.15–0.3 ms dearer while
-- they saved in pushes of 25 (docs/performance/round-06.md). A BEGIN ATOMIC body records what it calls,
-- so a dump restores it after them (0085).
create function app.report_facts(doc jsonb) returns setof app.report_facts
language sql immutable parallel safe
begin atomic
    select coalesce(app.iso_time(doc ->> 'date'), app.iso_time(doc ->> 'timestamp'), to_timestamp(0)),
           coalesce(app.fold(doc #>> '{vessel,name}'), ''),
           coalesce(app.fold(doc #>> '{vessel,permitNumber}'), ''),
           coalesce(app.fold(doc #>> '{captain,name}'), ''),
           coalesce(app.fold(doc #>> '{vessel,nationality}'), ''),
           v.violations, v.warnings, v.citations, v.dispositions, v.codes,
           sp.species, k.species, k.kg,
           to_tsvector('simple'::regconfig, regexp_replace(coalesce(app.fold(concat_ws(' ',
               doc #>> '{vessel,name}', doc #>> '{vessel,permitNumber}', doc #>> '{captain,name}', doc #>> '{captain,license}',
               cr.crew, v.findings, nt.notes)), ''), '[^[:alnum:]]+', ' ', 'g'))
      from (select string_agg(concat_ws(' ', c ->> 'name', c ->> 'license'), ' ') as crew from app.elements(doc -> 'crew') c) cr,
           (select string_agg(concat_ws(' ', v #>> '{offence,code}', v #>> '{offence,explanation}', v #>> '{crewMember,name}'), ' ') as findings,
                   (count(*) filter (where v ->> 'disposition' in ('Warning', 'Citation')))::integer as violations,
                   (count(*) filter (where v ->> 'disposition' = 'Warning'))::integer as warnings,
                   (count(*) filter (where v ->> 'disposition' = 'Citation'))::integer as citations,
                   coalesce(array_agg(distinct v ->> 'disposition') filter (where v ->> 'disposition' in ('Warning', 'Citation')), '{}') as dispositions,
                   coalesce(array_agg(coalesce(nullif(v -> 'offence' ->> 'code', ''), '(no code)'))
                            filter (where v ->> 'disposition' in ('Warning', 'Citation')), '{}') as codes
              from app.elements(doc #> '{inspection,summary,violations}') v) v,
           (select string_agg(n ->> 'note', ' ') as notes from app.elements(doc -> 'notes') n) nt,
           (select coalesce(array_agg(distinct c ->> 'fish') filter (where c ->> 'fish' is not null), '{}') as species
              from app.elements(doc #> '{inspection,actualCatch}') c) sp,
           (select coalesce(array_agg(fish order by fish), '{}') as species, coalesce(array_agg(kg order by fish), '{}') as kg
              from app.report_catch(doc)) k;
end;

-- The proof: every stored row's facts, as the generated columns computed them, equal the new
-- function's; otherwise the migration fails and changes nothing. (No parallel plan:
-- app.iso_time's exception block cannot run in a parallel worker.)
set local max_parallel_workers_per_gather = 0;
do $$
declare
    differing bigint;
begin
    select count(*) into differing
      from sync.reports r, app.report_facts(r.doc) f
     where (r.boarded_at, r.vessel_key, r.permit_key, r.captain_key, r.nationality_key, r.violation_count, r.warnings,
            r.citations, r.dispositions, r.violation_codes, r.species, r.catch_species, r.catch_kg, r.search)
           is distinct from
           (f.boarded_at, f.vessel_key, f.permit_key, f.captain_key, f.nationality_key, f.violation_count, f.warnings,
            f.citations, f.dispositions, f.violation_codes, f.species, f.catch_species, f.catch_kg, f.search);
    if differing > 0 then
        raise exception 'app.report_facts differs from the stored facts of % reports', differing;
    end if;
end
$$;

alter table sync.reports
    alter column boarded_at drop expression,
    alter column vessel_key drop expression,
    alter column permit_key drop expression,
    alter column captain_key drop expression,
    alter column nationality_key drop expression,
    alter column violation_count drop expression,
    alter column warnings drop expression,
    alter column citations drop expression,
    alter column dispositions drop expression,
    alter column violation_codes drop expression,
    alter column species drop expression,
    alter column catch_species drop expression,
    alter column catch_kg drop expression,
    alter column search drop expression;

-- Every insert and update stores the facts of its document, whatever the statement wrote in
-- these columns (as a generated column would; a tombstone's null document gives the same
-- facts the generated columns gave it). Named so that it fires before any later BEFORE trigger.
create function app.store_report_facts() returns trigger
language plpgsql as $$
begin
    select f.boarded_at, f.vessel_key, f.permit_key, f.captain_key, f.nationality_key, f.violation_count, f.warnings,
           f.citations, f.dispositions, f.violation_codes, f.species, f.catch_species, f.catch_kg, f.search
      into new.boarded_at, new.vessel_key, new.permit_key, new.captain_key, new.nationality_key, new.violation_count, new.warnings,
           new.citations, new.dispositions, new.violation_codes, new.species, new.catch_species, new.catch_kg, new.search
      from app.report_facts(new.doc) f;
    return new;
end
$$;
create trigger a_report_facts before insert or update on sync.reports
    for each row execute function app.store_report_facts();

-- The per-column functions had no other caller (app.elements and app.report_catch stay:
-- app.report_facts and the CSV export read them).
drop function app.report_search_text(jsonb);
drop function app.report_species(jsonb);
drop function app.report_dispositions(jsonb);
drop function app.report_violation_count(jsonb, text);
drop function app.report_violation_codes(jsonb);
drop function app.report_catch_species(jsonb);
drop function app.report_catch_kg(jsonb);
