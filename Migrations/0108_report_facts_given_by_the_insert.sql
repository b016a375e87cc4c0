-- Write path (issue 22): a push's new reports get their facts from the INSERT that writes
-- them (app.insert_documents, repeatable/0005), computed for the whole statement; the BEFORE
-- trigger computes them for every other insert (a row written without them) and for every
-- update, as before. Same values: one definition of every fact (app.report_facts, 0096/0098,
-- and app.report_plain_facts, 0102), read by both through app.report_row_facts below.
--
-- Why: a BEFORE ROW trigger runs its query once per row, and each run starts and ends that
-- query's executor (five aggregates over the document's arrays, their nested loops and
-- expressions compiled again): ~14% of the writing backend's CPU in a push of 25, the trigger
-- with its call, SPI and 22 assignments ~40% (docs/performance/round-10.md, "The report's row, tenth
-- round"). In the INSERT the same query is part of the statement's plan: its executor starts
-- once per statement and each row only rescans it.
--
-- The guard: the insert trigger fires for a row whose `search` is null, which is every row
-- whose statement did not write the facts (no fact column has a default, and app.report_facts
-- never gives a null search, not even for a tombstone). A statement that writes the facts is
-- trusted with them, as it is with the document they come from; app.insert_documents is the
-- one that does, from app.report_row_facts. Updates always recompute (the update trigger has
-- no condition): an update's `search` is the stored row's.
-- Tests/EndToEnd/test_report_facts.py checks the facts a push stores against the trigger's for
-- documents of every shape, and every stored report's facts against app.report_row_facts.

-- All 22 facts of a report's row, named as its columns: 0096's fourteen, 0102's seven plain
-- ones, and is_boarding, which also reads the row's `deleted` (0050's expression).
-- A set of one row like app.report_facts, so that PostgreSQL inlines it (and both functions
-- it reads) into the statement that calls it.
create type app.report_row_facts as (
    boarded_at timestamptz, vessel_key text, permit_key text, captain_key text, nationality_key text,
    violation_count integer, warnings integer, citations integer, dispositions text[], violation_codes text[],
    species text[], catch_species text[], catch_kg double precision[], search tsvector,
    officer_key text, safety_rank smallint, is_draft boolean, officer_email text, safety_level text,
    lon double precision, lat double precision, is_boarding boolean);

create function app.report_row_facts(doc jsonb, deleted boolean) returns setof app.report_row_facts
language sql immutable parallel safe
begin atomic
    select f.boarded_at, f.vessel_key, f.permit_key, f.captain_key, f.nationality_key, f.violation_count, f.warnings,
           f.citations, f.dispositions, f.violation_codes, f.species, f.catch_species, f.catch_kg, f.search,
           p.officer_key, p.safety_rank, p.is_draft, p.officer_email, p.safety_level, p.lon, p.lat,
           not deleted and coalesce(doc ->> 'draft', 'false') <> 'true'
      from app.report_facts(doc) f, app.report_plain_facts(doc) p;
end;

-- 0102's trigger function, reading the facts through app.report_row_facts (the same query).
create or replace function app.store_report_facts() returns trigger
language plpgsql as $$
begin
    select f.boarded_at, f.vessel_key, f.permit_key, f.captain_key, f.nationality_key, f.violation_count, f.warnings,
           f.citations, f.dispositions, f.violation_codes, f.species, f.catch_species, f.catch_kg, f.search,
           f.officer_key, f.safety_rank, f.is_draft, f.officer_email, f.safety_level, f.lon, f.lat, f.is_boarding
      into new.boarded_at, new.vessel_key, new.permit_key, new.captain_key, new.nationality_key, new.violation_count, new.warnings,
           new.citations, new.dispositions, new.violation_codes, new.species, new.catch_species, new.catch_kg, new.search,
           new.officer_key, new.safety_rank, new.is_draft, new.officer_email, new.safety_level, new.lon, new.lat,
           new.is_boarding
      from app.report_row_facts(new.doc, new.deleted) f;
    return new;
end
$$;

-- One trigger per event, in one transaction with the function (no moment without them): an
-- INSERT trigger's condition cannot read OLD, an UPDATE's must not skip. Named so that they
-- fire before any later BEFORE trigger.
drop trigger a_report_facts on sync.reports;
create trigger a_report_facts before update on sync.reports
    for each row execute function app.store_report_facts();
create trigger a_report_facts_unless_given before insert on sync.reports
    for each row when (new.search is null) execute function app.store_report_facts();
