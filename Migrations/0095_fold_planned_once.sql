-- Write path (issue 22): app.fold (0030) as PL/pgSQL with the same expression — same
-- results, so the stored generated keys of sync.reports (0031) and the indexes on them stay
-- right and nothing is rebuilt.
--
-- Why: app.fold is immutable (generated columns and indexes need that), but its body calls
-- unaccent, which is only stable, and PostgreSQL never inlines an immutable SQL function
-- whose body is not; so each of its five calls in a report's INSERT (the four sort keys
-- and the search text) parsed and planned the body again, in every statement. A PL/pgSQL
-- body keeps its plan for the connection and evaluates the expression as a simple
-- expression (docs/performance/round-05.md, "A lone push's fixed cost").
create or replace function app.fold(t text) returns text
language plpgsql immutable strict parallel safe as $$
begin
    return lower(public.unaccent('public.unaccent'::regdictionary, t));
end
$$;
