-- Write path (issue 22): the report facts that need a function (0031, 0050) computed by ONE
-- function in one pass over the document, and stored by a BEFORE trigger instead of as
-- stored generated columns. Same values: checked below on every stored row before anything
-- changes.
--
-- Why: PostgreSQL computes each generated column on its own, so a report's INSERT ran seven
-- PL/pgSQL fact functions whose eleven queries walked the same arrays again (the violations
-- five times: the three counts, the dispositions, the codes; the catch twice), each query an
-- executor start and stop (docs/performance.md, "PostgreSQL's CPU per created report").
-- A generated column cannot read another, so one function returning every fact can only
-- feed the columns from a trigger. `app.report_facts` walks each array once in a loop.
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

-- The number of elements of a JSON array; 0 when the value is missing or not an array (as
-- app.elements has none). An inlined expression: the loops below index the array with it,
-- which costs no query (a `for … in select … from app.elements(…)` loop measured 0.15 ms
-- more per report, an executor start per array and row).
create function app.array_length_or_zero(a jsonb) returns integer
language sql immutable parallel safe
return case when jsonb_typeof(a) = 'array' then jsonb_array_length(a) else 0 end;

-- Distinct texts in the default collation's order, as array_agg(distinct …) gives them: an
-- insertion sort, since a report lists a few species (a query would cost an executor start).
create function app.sorted_distinct(a text[]) returns text[]
language plpgsql immutable parallel safe as $$
declare
    sorted text[] := '{}';
    t text;
    i integer;
    n integer;
begin
    foreach t in array a loop
        n := coalesce(array_length(sorted, 1), 0);
        i := n;
        while i > 0 and sorted[i] > t loop
            i := i - 1;
        end loop;
        continue when i > 0 and sorted[i] = t;
        sorted := sorted[1:i] || t || sorted[i + 1:n];
    end loop;
    return sorted;
end
$$;

-- domain.md's derived facts of a report document (0050's header defines them): a violation is
-- a finding whose disposition is 'Warning' or 'Citation'; the boarding date is `date`, else
-- `timestamp`; catch weights in kilograms (1 lb = 0.45359237 kg), summed per species in the
-- document's order. The search text is the vessel name, permit number, captain and crew names
-- and licenses, every finding's code, explanation and crew member, and the notes, folded
-- (unaccent, lower case) with punctuation made space: the parser would read `CR-2023-01234`
-- as `cr`, `-2023` and `-01234`, and the search for `2023` would miss it.
--
-- One loop per array, indexing it, so that every statement is a simple expression PL/pgSQL
-- evaluates without the executor; a query with aggregates (a first version of this
-- function) cost an executor start, with a sort per DISTINCT or ORDER BY aggregate, for
-- every row.
-- Each piece keeps the semantics of the function it replaces (app.elements: a missing or
-- non-array value has no elements; string_agg skips nulls; array_agg(distinct) sorts).
create function app.report_facts(doc jsonb) returns app.report_facts
language plpgsql immutable parallel safe as $$
declare
    f app.report_facts;
    a jsonb;
    e jsonb;
    s text;
    crew text;
    findings text;
    notes text;
    fish text;
    kg double precision;
    k integer;
    species text[] := '{}';
    fishes text[] := '{}';
    weights double precision[] := '{}';
begin
    f.violation_count := 0;
    f.warnings := 0;
    f.citations := 0;
    f.violation_codes := '{}';
    a := doc -> 'crew';
    for i in 0 .. app.array_length_or_zero(a) - 1 loop
        e := a -> i;
        s := concat_ws(' ', e ->> 'name', e ->> 'license');
        crew := case when crew is null then s else crew || ' ' || s end;
    end loop;
    a := doc #> '{inspection,summary,violations}';
    for i in 0 .. app.array_length_or_zero(a) - 1 loop
        e := a -> i;
        s := concat_ws(' ', e #>> '{offence,code}', e #>> '{offence,explanation}', e #>> '{crewMember,name}');
        findings := case when findings is null then s else findings || ' ' || s end;
        s := e ->> 'disposition';
        if s = 'Warning' then
            f.warnings := f.warnings + 1;
        elsif s = 'Citation' then
            f.citations := f.citations + 1;
        else
            continue;
        end if;
        f.violation_count := f.violation_count + 1;
        f.violation_codes := f.violation_codes || coalesce(nullif(e -> 'offence' ->> 'code', ''), '(no code)');
    end loop;
    f.dispositions := case when f.citations > 0 and f.warnings > 0 then '{Citation,Warning}'
                           when f.citations > 0 then '{Citation}' when f.warnings > 0 then '{Warning}' else '{}' end;
    a := doc -> 'notes';
    for i in 0 .. app.array_length_or_zero(a) - 1 loop
        e := a -> i;
        s := e ->> 'note';
        if s is not null then
            notes := case when notes is null then s else notes || ' ' || s end;
        end if;
    end loop;
    a := doc #> '{inspection,actualCatch}';
    for i in 0 .. app.array_length_or_zero(a) - 1 loop
        e := a -> i;
        fish := e ->> 'fish';
        if fish is not null then
            species := species || fish;
        end if;
        if coalesce(fish, '') <> '' and jsonb_typeof(e -> 'weight') = 'number' then
            kg := case when lower(e ->> 'unit') in ('lb', 'lbs', 'pound', 'pounds') then (e ->> 'weight')::double precision * 0.45359237
                       else (e ->> 'weight')::double precision end;
            k := array_position(fishes, fish);
            if k is null then
                fishes := fishes || fish;
                weights := weights || kg;
            else
                weights[k] := weights[k] + kg;
            end if;
        end if;
    end loop;
    f.species := app.sorted_distinct(species);
    f.catch_species := app.sorted_distinct(fishes);
    f.catch_kg := '{}';
    foreach fish in array f.catch_species loop
        f.catch_kg := f.catch_kg || weights[array_position(fishes, fish)];
    end loop;
    f.boarded_at := coalesce(app.iso_time(doc ->> 'date'), app.iso_time(doc ->> 'timestamp'), to_timestamp(0));
    f.vessel_key := coalesce(app.fold(doc #>> '{vessel,name}'), '');
    f.permit_key := coalesce(app.fold(doc #>> '{vessel,permitNumber}'), '');
    f.captain_key := coalesce(app.fold(doc #>> '{captain,name}'), '');
    f.nationality_key := coalesce(app.fold(doc #>> '{vessel,nationality}'), '');
    f.search := to_tsvector('simple'::regconfig, regexp_replace(coalesce(app.fold(concat_ws(' ',
        doc #>> '{vessel,name}', doc #>> '{vessel,permitNumber}', doc #>> '{captain,name}', doc #>> '{captain,license}',
        crew, findings, notes)), ''), '[^[:alnum:]]+', ' ', 'g'));
    return f;
end
$$;

-- The proof: every stored row's facts, as the generated columns computed them, equal the new
-- function's; otherwise the migration fails and changes nothing. (One thing can differ in
-- reports not yet written: 0050 summed a species' weights in the order of a sort, which for
-- seven or more entries of one species need not be the document's, and floating-point sums
-- depend on order in their last bits; the sum is now in the document's order, whatever plan.) (No parallel plan:
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
declare
    f app.report_facts := app.report_facts(new.doc);
begin
    new.boarded_at := f.boarded_at;
    new.vessel_key := f.vessel_key;
    new.permit_key := f.permit_key;
    new.captain_key := f.captain_key;
    new.nationality_key := f.nationality_key;
    new.violation_count := f.violation_count;
    new.warnings := f.warnings;
    new.citations := f.citations;
    new.dispositions := f.dispositions;
    new.violation_codes := f.violation_codes;
    new.species := f.species;
    new.catch_species := f.catch_species;
    new.catch_kg := f.catch_kg;
    new.search := f.search;
    return new;
end
$$;
create trigger a_report_facts before insert or update on sync.reports
    for each row execute function app.store_report_facts();

-- The per-column functions had no other caller (app.elements stays: the CSV export reads it).
drop function app.report_search_text(jsonb);
drop function app.report_species(jsonb);
drop function app.report_dispositions(jsonb);
drop function app.report_violation_count(jsonb, text);
drop function app.report_violation_codes(jsonb);
drop function app.report_catch_species(jsonb);
drop function app.report_catch_kg(jsonb);
drop function app.report_catch(jsonb);
