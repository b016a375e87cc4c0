-- What the back office lists, filters, sorts and searches boarding reports by, kept as
-- stored generated columns of sync.reports: computed once per write from the document,
-- never out of step with it, and indexable. A list page then reads narrow columns instead
-- of de-TOASTing every JSON document, and keyset pagination walks (key, id) indexes.

-- A zoned ISO 8601 string (the schema accepts nothing else) as a timestamp; null when it
-- does not parse, so a bad date can never make a write fail here. Immutable because a
-- zoned timestamp does not depend on the session's TimeZone.
create function app.iso_time(t text) returns timestamptz
language plpgsql immutable parallel safe as $$
begin
    return t::timestamptz;
exception when others then
    return null;
end
$$;

-- The elements of a JSON array, or none when the value is missing or not an array.
create function app.elements(a jsonb) returns setof jsonb
language sql immutable parallel safe as $$
    select e from jsonb_array_elements(case when jsonb_typeof(a) = 'array' then a else '[]'::jsonb end) e
$$;

-- Everything the text search looks at: vessel name, permit number, captain and crew names
-- and licenses, violation codes and explanations (and the crew member named in one), notes.
create function app.report_search_text(doc jsonb) returns text
language sql immutable parallel safe as $$
    select concat_ws(' ',
        doc #>> '{vessel,name}', doc #>> '{vessel,permitNumber}',
        doc #>> '{captain,name}', doc #>> '{captain,license}',
        (select string_agg(concat_ws(' ', c ->> 'name', c ->> 'license'), ' ') from app.elements(doc -> 'crew') c),
        (select string_agg(concat_ws(' ', v #>> '{offence,code}', v #>> '{offence,explanation}', v #>> '{crewMember,name}'), ' ')
           from app.elements(doc #> '{inspection,summary,violations}') v),
        (select string_agg(n ->> 'note', ' ') from app.elements(doc -> 'notes') n))
$$;

create function app.report_species(doc jsonb) returns text[]
language sql immutable parallel safe as $$
    select coalesce(array_agg(distinct c ->> 'fish') filter (where c ->> 'fish' is not null), '{}')
      from app.elements(doc #> '{inspection,actualCatch}') c
$$;

-- The dispositions of a report's findings; '' (a finding without consequence) stays out.
create function app.report_dispositions(doc jsonb) returns text[]
language sql immutable parallel safe as $$
    select coalesce(array_agg(distinct v ->> 'disposition') filter (where v ->> 'disposition' in ('Warning', 'Citation')), '{}')
      from app.elements(doc #> '{inspection,summary,violations}') v
$$;

-- domain.md: a violation is a finding whose disposition is Warning or Citation; `kind`
-- counts only one of the two (null: both). The dashboards' columns (0050) count by kind.
create function app.report_violation_count(doc jsonb, kind text) returns integer
language sql immutable parallel safe as $$
    select count(*)::integer from app.elements(doc #> '{inspection,summary,violations}') v
     where v ->> 'disposition' in ('Warning', 'Citation')
       and (kind is null or v ->> 'disposition' = kind)
$$;

alter table sync.reports
    add column boarded_at timestamptz generated always as (
        coalesce(app.iso_time(doc ->> 'date'), app.iso_time(doc ->> 'timestamp'), to_timestamp(0))) stored,
    add column vessel_key text generated always as (coalesce(app.fold(doc #>> '{vessel,name}'), '')) stored,
    add column permit_key text generated always as (coalesce(app.fold(doc #>> '{vessel,permitNumber}'), '')) stored,
    add column captain_key text generated always as (coalesce(app.fold(doc #>> '{captain,name}'), '')) stored,
    add column officer_key text generated always as (coalesce(lower(doc #>> '{reportingOfficer,email}'), '')) stored,
    -- Red 3, Amber 2, Green 1, none 0: sorting by it puts the worst first.
    add column safety_rank smallint generated always as (
        case doc #>> '{inspection,summary,safetyLevel,level}' when 'Red' then 3 when 'Amber' then 2 when 'Green' then 1 else 0 end) stored,
    add column violation_count integer generated always as (coalesce(app.report_violation_count(doc, null), 0)) stored,
    add column nationality_key text generated always as (coalesce(app.fold(doc #>> '{vessel,nationality}'), '')) stored,
    add column species text[] generated always as (coalesce(app.report_species(doc), '{}')) stored,
    add column dispositions text[] generated always as (coalesce(app.report_dispositions(doc), '{}')) stored,
    add column is_draft boolean generated always as (coalesce(doc ->> 'draft' = 'true', false)) stored,
    -- Punctuation becomes space first: the parser would read `CR-2023-01234` as `cr`, `-2023`
    -- and `-01234`, and the search for `2023` would miss it.
    add column search tsvector generated always as (
        to_tsvector('simple'::regconfig,
            regexp_replace(coalesce(app.fold(app.report_search_text(doc)), ''), '[^[:alnum:]]+', ' ', 'g'))) stored;

create index reports_by_date on sync.reports (boarded_at, id) where not deleted;
create index reports_by_vessel on sync.reports (vessel_key, id) where not deleted;
create index reports_by_permit on sync.reports (permit_key, id) where not deleted;
create index reports_by_captain on sync.reports (captain_key, id) where not deleted;
create index reports_by_officer on sync.reports (officer_key, id) where not deleted;
create index reports_by_safety on sync.reports (safety_rank, id) where not deleted;
create index reports_by_violations on sync.reports (violation_count, id) where not deleted;
create index reports_search on sync.reports using gin (search) where not deleted;
-- A report's photos, for its page.
create index photos_by_report on sync.photos ((doc ->> 'referencingReportID')) where not deleted;
