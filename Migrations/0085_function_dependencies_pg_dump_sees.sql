-- Backups (issue 20): the report facts of 0031 and 0050 that call other functions of ours,
-- rewritten with SQL-standard bodies (BEGIN ATOMIC) — same queries, same results.
--
-- A quoted body ($$ … $$) is opaque to PostgreSQL's dependency records, so pg_dump did not
-- know that app.report_species needs app.elements, and could order app.elements after
-- sync.reports. Creating the table then fails on restore ("function app.elements(jsonb)
-- does not exist": a stored generated column's expression is planned, its SQL functions
-- inlined, when the table is created), and `pg_restore` of any dump stopped there. A
-- BEGIN ATOMIC body is parsed when it is created, and its dependencies are recorded, so
-- pg_dump creates app.elements and app.report_catch first. Tests/EndToEnd/
-- test_backup_restore.py restores a dump onto an empty cluster.
--
-- The bodies are unchanged, so the stored columns computed by the old ones stay right and
-- nothing is rebuilt. New functions that call functions of ours, and that a table's
-- definition needs, are written this way from the start.

create or replace function app.report_search_text(doc jsonb) returns text
language sql immutable parallel safe
begin atomic
    select concat_ws(' ',
        doc #>> '{vessel,name}', doc #>> '{vessel,permitNumber}',
        doc #>> '{captain,name}', doc #>> '{captain,license}',
        (select string_agg(concat_ws(' ', c ->> 'name', c ->> 'license'), ' ') from app.elements(doc -> 'crew') c),
        (select string_agg(concat_ws(' ', v #>> '{offence,code}', v #>> '{offence,explanation}', v #>> '{crewMember,name}'), ' ')
           from app.elements(doc #> '{inspection,summary,violations}') v),
        (select string_agg(n ->> 'note', ' ') from app.elements(doc -> 'notes') n));
end;

create or replace function app.report_species(doc jsonb) returns text[]
language sql immutable parallel safe
begin atomic
    select coalesce(array_agg(distinct c ->> 'fish') filter (where c ->> 'fish' is not null), '{}')
      from app.elements(doc #> '{inspection,actualCatch}') c;
end;

create or replace function app.report_dispositions(doc jsonb) returns text[]
language sql immutable parallel safe
begin atomic
    select coalesce(array_agg(distinct v ->> 'disposition') filter (where v ->> 'disposition' in ('Warning', 'Citation')), '{}')
      from app.elements(doc #> '{inspection,summary,violations}') v;
end;

create or replace function app.report_violation_count(doc jsonb, kind text) returns integer
language sql immutable parallel safe
begin atomic
    select count(*)::integer from app.elements(doc #> '{inspection,summary,violations}') v
     where v ->> 'disposition' in ('Warning', 'Citation')
       and (kind is null or v ->> 'disposition' = kind);
end;

create or replace function app.report_catch_species(doc jsonb) returns text[]
language sql immutable parallel safe
begin atomic
    select coalesce(array_agg(fish order by fish), '{}') from app.report_catch(doc);
end;

create or replace function app.report_catch_kg(doc jsonb) returns double precision[]
language sql immutable parallel safe
begin atomic
    select coalesce(array_agg(kg order by fish), '{}') from app.report_catch(doc);
end;
