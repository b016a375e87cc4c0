-- Write path (issue 22): the report facts that stored generated columns of sync.reports
-- compute (0031, 0050, 0085), as PL/pgSQL functions with the same queries — same results,
-- so the stored columns stay right and nothing is rebuilt.
--
-- Why: none of them can be inlined (each reads a set: a FROM, or a sub-select), and a
-- SQL-language function that is not inlined parses and plans its body again in every
-- statement that calls it. A lone report's INSERT ran seven such bodies through the
-- planner: measured (docs/performance/method.md, 300 one-row INSERTs with triggers off) 2.15 ms
-- a row as SQL against 1.1 ms as PL/pgSQL, whose plans are kept for the session. In one
-- statement of many rows the SQL bodies are planned once, so batches gain nothing (and
-- lose ~10% per row to PL/pgSQL's call); pushes are mostly small.
--
-- Backups (0085): a PL/pgSQL body is opaque to dependency records again, but it is no
-- longer inlined when sync.reports is created, so pg_restore creates the table whatever
-- the order of these functions; its rows are loaded after every function exists
-- (Tests/EndToEnd/test_backup_restore.py). The remaining SQL-language ones (app.elements,
-- app.report_catch, app.fold) are called only from these bodies or are inlined.

create or replace function app.report_search_text(doc jsonb) returns text
language plpgsql immutable parallel safe as $$
begin
    return concat_ws(' ',
        doc #>> '{vessel,name}', doc #>> '{vessel,permitNumber}',
        doc #>> '{captain,name}', doc #>> '{captain,license}',
        (select string_agg(concat_ws(' ', c ->> 'name', c ->> 'license'), ' ') from app.elements(doc -> 'crew') c),
        (select string_agg(concat_ws(' ', v #>> '{offence,code}', v #>> '{offence,explanation}', v #>> '{crewMember,name}'), ' ')
           from app.elements(doc #> '{inspection,summary,violations}') v),
        (select string_agg(n ->> 'note', ' ') from app.elements(doc -> 'notes') n));
end
$$;

create or replace function app.report_species(doc jsonb) returns text[]
language plpgsql immutable parallel safe as $$
begin
    return (select coalesce(array_agg(distinct c ->> 'fish') filter (where c ->> 'fish' is not null), '{}')
              from app.elements(doc #> '{inspection,actualCatch}') c);
end
$$;

create or replace function app.report_dispositions(doc jsonb) returns text[]
language plpgsql immutable parallel safe as $$
begin
    return (select coalesce(array_agg(distinct v ->> 'disposition') filter (where v ->> 'disposition' in ('Warning', 'Citation')), '{}')
              from app.elements(doc #> '{inspection,summary,violations}') v);
end
$$;

create or replace function app.report_violation_count(doc jsonb, kind text) returns integer
language plpgsql immutable parallel safe as $$
begin
    return (select count(*)::integer from app.elements(doc #> '{inspection,summary,violations}') v
             where v ->> 'disposition' in ('Warning', 'Citation')
               and (kind is null or v ->> 'disposition' = kind));
end
$$;

create or replace function app.report_violation_codes(doc jsonb) returns text[]
language plpgsql immutable parallel safe as $$
begin
    return (select coalesce(array_agg(coalesce(nullif(v -> 'offence' ->> 'code', ''), '(no code)')), '{}')
              from jsonb_array_elements(case when jsonb_typeof(doc -> 'inspection' -> 'summary' -> 'violations') = 'array'
                                             then doc -> 'inspection' -> 'summary' -> 'violations' else '[]' end) v
             where v ->> 'disposition' in ('Warning', 'Citation'));
end
$$;

create or replace function app.report_catch_species(doc jsonb) returns text[]
language plpgsql immutable parallel safe as $$
begin
    return (select coalesce(array_agg(fish order by fish), '{}') from app.report_catch(doc));
end
$$;

create or replace function app.report_catch_kg(doc jsonb) returns double precision[]
language plpgsql immutable parallel safe as $$
begin
    return (select coalesce(array_agg(kg order by fish), '{}') from app.report_catch(doc));
end
$$;
