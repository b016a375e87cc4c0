-- Write path (issue 22): a report's search vector built from its words directly, without
-- the text-search parser and without positions. Same lexemes, so every search matches the
-- same reports: checked below on every stored row, in the migration's transaction.
--
-- Why: the search vector was the dearest report fact (docs/performance/round-07.md, "the search
-- vector without the parser"): `to_tsvector('simple', …)` ran the default parser over a
-- text that `regexp_replace` had already reduced to letters, digits and single spaces,
-- so each token was exactly one run of letters and digits, and the vector kept a
-- position for each, which no query reads: the boardings list (BoardingFilter.tsquery) asks
-- only for every word as a prefix (`'w':* & …`), and `@@` reads positions only for phrase
-- operators and weights. Positions made the stored vector ~1.5 times as big (and the row with
-- it), and the parser cost more than the split that replaces it.
--
-- `app.search_words(folded)` is the one definition of what a report's search text becomes:
-- the runs of letters and digits of the folded text, as a stripped tsvector. For texts
-- under 2,047 bytes it splits on the same pattern and builds the vector from the array;
-- that equals `strip(to_tsvector('simple', regexp_replace(text, '[^[:alnum:]]+', ' ',
-- 'g')))` because (measured on this database's C.UTF-8 ctype, and checked again below on
-- every stored report): the parser reads a run of [:alnum:] characters as one token (every
-- one of the 134,056 alnum code points, alone, doubled, and next to letters and digits of
-- both scripts; 600,000 random runs of digits, e, E and letters of several scripts) but
-- one: a run that starts with digits, an e and a digit is a number in scientific notation
-- to the parser, which ends it after the exponent's digits (`6e9bc0c3` is `6e9` and
-- `bc0c3`); the 'simple' dictionary only lowercases (no stop words) and `lower` of the
-- folded text is idempotent for every such code point; and a run shorter than 2,047 bytes
-- is never dropped (the parser ignores longer words; no run of a shorter text can be
-- one). Texts with such a number, and longer texts, keep the parser and its positions:
-- the list's query for such a code is split by the parser the same way, into a phrase
-- (`'400e908':* <-> 'd':*`), which only a vector with positions can match. (The first
-- version of this file missed the number; a bench database's random hex codes showed it.)
--
-- PL/pgSQL so that the folded text is an argument, computed once (a SQL function using its
-- argument three times is not inlined), and one simple expression prepared once per
-- transaction. Stored vectors keep their positions (no rewrite): their lexemes are the new
-- function's, so they match the same queries; a report's next write stores the new form.
create function app.search_words(folded text) returns tsvector
language plpgsql immutable parallel safe as $$
begin
    return case when octet_length(folded) < 2047 and folded !~ '(^|[^[:alnum:]])[0-9]+[eE][0-9]'
                then array_to_tsvector(array_remove(regexp_split_to_array(folded, '[^[:alnum:]]+'), ''))
                else to_tsvector('simple'::regconfig, regexp_replace(folded, '[^[:alnum:]]+', ' ', 'g')) end;
end
$$;

-- 0096's function, the search from app.search_words; every other fact as it was. (The body
-- is repeated because an ordered file is history: from here on this is its definition.)
create or replace function app.report_facts(doc jsonb) returns setof app.report_facts
language sql immutable parallel safe
begin atomic
    select coalesce(app.iso_time(doc ->> 'date'), app.iso_time(doc ->> 'timestamp'), to_timestamp(0)),
           coalesce(app.fold(doc #>> '{vessel,name}'), ''),
           coalesce(app.fold(doc #>> '{vessel,permitNumber}'), ''),
           coalesce(app.fold(doc #>> '{captain,name}'), ''),
           coalesce(app.fold(doc #>> '{vessel,nationality}'), ''),
           v.violations, v.warnings, v.citations, v.dispositions, v.codes,
           sp.species, k.species, k.kg,
           app.search_words(coalesce(app.fold(concat_ws(' ',
               doc #>> '{vessel,name}', doc #>> '{vessel,permitNumber}', doc #>> '{captain,name}', doc #>> '{captain,license}',
               cr.crew, v.findings, nt.notes)), ''))
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

-- The proof (as 0096's, in the same transaction, so a difference changes nothing): every
-- stored row's search vector has the new function's lexemes (the other facts are 0096's
-- expressions, unchanged; where it keeps positions, its expression is the old one).
set local max_parallel_workers_per_gather = 0;
do $$
declare
    differing bigint;
begin
    select count(*) into differing
      from sync.reports r, app.report_facts(r.doc) f
     where strip(r.search) is distinct from strip(f.search);
    if differing > 0 then
        raise exception 'app.search_words differs from the stored search of % reports', differing;
    end if;
end
$$;
