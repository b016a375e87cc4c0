-- An expected refusal, raised without an ERROR line in PostgreSQL's log (Migrations/0100):
-- `perform app.refuse('TW409', 'the push needs its reads')` where `raise exception … using
-- errcode` stood. The error is the same to everything else: it aborts the statement (and,
-- uncaught, the transaction), an exception block catches it by its SQLSTATE, the worker
-- maps it to its 4xx once (Web/AppError.swift).
--
-- Only the RAISE runs under the SET clause, so a real error around a refusal (the push
-- log's lookup, a lock, a trigger) is logged as before; the body checks nothing that could
-- fail for a real reason. A refusal is a TW4nn, or 28000 for a token that does not
-- authenticate (app.authenticate: an expired access token is every device's daily routine,
-- and a client spraying made-up tokens must not fill the log). Any other code is a
-- caller's bug: a LOG line, which `log_min_messages = log` still writes, says so before
-- the error.
--
-- Called by PL/pgSQL functions only (their bodies are checked when they first run), so
-- the files before this one may name it.
create or replace function app.refuse(code text, message text) returns void
language plpgsql security definer set search_path = pg_catalog, pg_temp set log_min_messages = log as $$
begin
    if code is null or code !~ '^(TW4[0-9][0-9]|28000)$' then
        raise log 'app.refuse of % (not a refusal): %', code, message;
    end if;
    raise exception using errcode = coalesce(code, 'TW400'), message = coalesce(message, 'refused');
end
$$;
