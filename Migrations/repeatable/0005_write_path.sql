-- The one write path: a change to one document, applied under the caller's claims (so
-- row-level security decides), numbered by the partition's clock, recorded in the push
-- log. Expected refusals come back as a result instead of an error, so that one rejected
-- change does not stop the others of a batch (the exception block is a savepoint).
--
-- `new_doc` is the whole document to store: for an update the server has already merged
-- the client's patch into the current document and checked the schema.

-- Generic plans (`set plan_cache_mode = force_generic_plan` on the functions below): PL/pgSQL
-- keeps a statement's plan for the connection, but PostgreSQL's plan cache still plans a
-- statement again at every call while a plan for the call's own values looks cheaper than
-- the generic one — always, when the values fold away a CASE over the collection or size
-- an `= any(array)`: the push-log lookup of app.expect_first_push, the push-log INSERT of
-- app.insert_documents and app.can_write's CASE were planned at every push (~0.6 ms of a
-- lone push's ~3 ms, docs/performance/round-05.md). The statements here are small lookups and
-- writes by key, whose generic plan is the custom one.

-- The table of a collection (app.collections, 0004), null for an unknown one: a CASE
-- written out from the rows, which PostgreSQL inlines.
do $do$
begin
    execute replace($f$
        create or replace function app.document_table(collection text) returns text
        language sql immutable as $$ select case collection @whens@ end $$ $f$,
        '@whens@', (select string_agg(format('when %L then %L', name, table_name), ' ' order by name) from app.collections));
end
$do$;

-- A change refused before it reached the database (schema, size) is logged too, so that a
-- retry gets the first outcome.
create or replace function app.log_rejection(client_id text, change_id text, outcome jsonb) returns jsonb
language sql as $$
    insert into app.push_log (user_id, client_id, change_id, result) values (app.uid(), client_id, change_id, outcome)
        on conflict do nothing;
    select outcome;
$$;

-- An insert of an id that exists in its partition is an UPDATE first, so that it needs only
-- the update right (a user's own `users` document may be updated, never inserted). An id
-- held by another partition's document is refused: `invalid` (a document cannot move) when
-- the caller can read that document, else the `forbidden` of any refused insert, which
-- tells nothing of a document the caller cannot see (issue 20, defect 9). A
-- users-document write carries the conversation intents of chat (repeatable/0011), undone with the
-- change when it is rejected.
--
-- One static statement per table rather than dynamic SQL: PL/pgSQL plans static
-- statements once per connection, where EXECUTE plans on every call (measured about 2.6
-- times faster per change). The branches differ only in the table's name, so the
-- function is written out here from app.collections (0004) at migration time: one static
-- branch per collection, each the template below with the collection's table.
do $do$
declare
    branches text := (
        select string_agg(format($b$
        when %1$L then
            if op = 'insert' then
                update sync.%2$I
                   set doc = new_doc, deleted = false, seq = app.tick(p, %1$L), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.%2$I as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p, %1$L), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                    -- Whose id it is, only when the caller may see that document (below).
                    hidden := moved and not exists (select from sync.%2$I where id = doc_id);
                end if;
            else
                update sync.%2$I
                   set doc = stored, deleted = (stored is null), seq = app.tick(p, %1$L), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
$b$, name, table_name), '' order by name)
          from app.collections);
begin
    execute replace($f$
create or replace function app.apply_change(
    collection text, p text, doc_id text, op text, new_doc jsonb,
    client_id text, change_id text, expected_version bigint default null, intents jsonb default null)
returns jsonb
language plpgsql set plan_cache_mode = force_generic_plan as $$
declare
    new_version bigint;
    outcome jsonb;
    intent jsonb;
    moved boolean := false;
    hidden boolean := false;
    stored jsonb := case when op = 'delete' then null else new_doc end;
begin
    if app.document_table(collection) is null then
        raise exception 'unknown collection' using errcode = 'TW422';
    end if;
    begin
        if op not in ('insert', 'update', 'delete') then
            raise exception 'unknown op' using errcode = 'TW422';
        end if;
        for intent in select * from jsonb_array_elements(coalesce(intents, '[]'::jsonb)) loop
            perform app.apply_conversation_intent(intent);
        end loop;
        -- A user's own copy of `conversations` is never stored as sent (repeatable/0011).
        if collection = 'users' and new_doc is not null then
            new_doc := jsonb_set(new_doc, '{conversations}', app.render_conversations(app.uid()));
            stored := case when op = 'delete' then null else new_doc end;
        end if;
        case collection
@branches@        end case;
        if hidden then
            -- The id is taken by a document the caller cannot see: the answer of any insert
            -- into a partition the caller may not write, so that it tells nothing of that
            -- document (not even that it exists elsewhere).
            outcome := jsonb_build_object('status', 'rejected', 'error',
                jsonb_build_object('code', 'forbidden', 'message', 'no write right on this partition'));
        elsif moved then
            outcome := jsonb_build_object('status', 'rejected', 'error',
                jsonb_build_object('code', 'invalid', 'message', 'a document cannot move to another partition'));
        elsif new_version is null then
            outcome := jsonb_build_object('status', 'rejected', 'error',
                jsonb_build_object('code', 'not_found', 'message', 'no such document in this partition'));
        end if;
        if outcome is not null then
            -- Undo the intents too: a rejected change writes nothing.
            raise exception using errcode = 'TW499', message = outcome::text;
        end if;
    exception
        when insufficient_privilege then
            outcome := jsonb_build_object('status', 'rejected', 'error',
                jsonb_build_object('code', 'forbidden', 'message', 'no write right on this partition'));
        when check_violation or not_null_violation or data_exception then
            outcome := jsonb_build_object('status', 'rejected', 'error',
                jsonb_build_object('code', 'invalid', 'message', 'the document breaks a rule'));
        when sqlstate 'TW403' then
            outcome := jsonb_build_object('status', 'rejected', 'error', jsonb_build_object('code', 'forbidden', 'message', sqlerrm));
        when sqlstate 'TW404' then
            outcome := jsonb_build_object('status', 'rejected', 'error', jsonb_build_object('code', 'not_found', 'message', sqlerrm));
        when sqlstate 'TW422' then
            outcome := jsonb_build_object('status', 'rejected', 'error', jsonb_build_object('code', 'invalid', 'message', sqlerrm));
        when sqlstate 'TW499' then
            outcome := sqlerrm::jsonb;
    end;
    if outcome is null then
        outcome := jsonb_build_object('status', 'applied', 'version', new_version::text);
    end if;
    outcome := jsonb_build_object('changeId', change_id) || outcome;
    if client_id is not null then
        insert into app.push_log (user_id, client_id, change_id, result) values (app.uid(), client_id, change_id, outcome)
            on conflict do nothing;
    end if;
    return outcome;
end
$$;
    $f$, '@branches@', branches);
end
$do$;

-- The outcomes the push log holds for some of the caller's changes from one client (a
-- retry's): the usual path's read (WritePath.apply) and app.expect_first_push below. One
-- probe of the log's whole key per change, a nested loop that the planner cannot make
-- otherwise (a LATERAL subquery with OFFSET 0 is not pulled up into a join). Written
-- `change_id = any(change_ids)`, the plan depended on whose claims it was first planned
-- under, and a worker's connection keeps that plan (generic, for every caller): PostgreSQL
-- estimates `user_id = app.uid()` with the planning caller's id, and for a caller with few
-- rows it kept only (user_id, client_id) as the index's condition and filtered the change
-- ids, reading every outcome of the client. The worker's warm-up plans it under a made-up
-- officer, so after each start a device with 46,000 logged changes paid ~10 ms of a push
-- until autovacuum's ANALYZE of the log made its backends plan again
-- (docs/performance/round-15.md, "A push's first 40 s: the push log read by key").
create or replace function app.logged_outcomes(client_id text, change_ids text[])
returns table (change_id text, result jsonb)
language sql stable as $$
    select l.change_id, l.result
      from unnest(change_ids) as c(id)
      cross join lateral (select l.change_id, l.result from app.push_log l
                           where l.user_id = app.uid() and l.client_id = logged_outcomes.client_id
                             and l.change_id = c.id
                          offset 0) as l
$$;

-- A push of new documents only goes to the database in one round trip (WritePath
-- applyFirstPush: this check, then its writes and COMMIT in the same pipeline, after the
-- push's advisory lock). Its writes are what the usual two round trips would send when the
-- reads find no earlier outcome of any change (not a retry) and every write right; when
-- either is not so, TW409 aborts the transaction, nothing is written, and the worker
-- applies the push again the usual way. Read after the lock, like the usual path's lookup,
-- so a retry racing its first attempt sees that attempt's outcomes. Raised by app.refuse
-- (repeatable/0100): every retried push takes this way, and its ERROR line in the server's
-- log was noise (docs/performance/round-08.md, "Refusals without ERROR lines").
--
-- The write rights one by one in a loop: app.can_write is then a plain expression PL/pgSQL
-- evaluates itself, where the query over unnest(…) was an executor started and ended per push.
create or replace function app.expect_first_push(
    client_id text, change_ids text[], partitions text[], collections text[]) returns void
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
    if exists (select from app.logged_outcomes(client_id, change_ids)) then
        perform app.refuse('TW409', 'the push needs its reads');
    end if;
    for i in 1 .. coalesce(greatest(cardinality(partitions), cardinality(collections)), 0) loop
        if app.can_write(partitions[i], collections[i]) is not true then
            perform app.refuse('TW409', 'the push needs its reads');
        end if;
    end loop;
end
$$;

-- One push per (user, client) at a time (WritePath.pushLock): a retry sent while the first
-- attempt is still running waits for it, then finds its outcomes in the push log. A SQL
-- function of one SELECT, which PostgreSQL inlines where it is called.
create or replace function app.push_lock(client_id text) returns void
language sql as $$
    select pg_advisory_xact_lock(hashtextextended(app.uid()::text || '/' || client_id, 740601))
$$;

-- The pushing device's row (the sync inspector, the back office's device list): when it
-- last pushed, with which app version. PL/pgSQL so that its statements are planned once per
-- connection (a SQL function's INSERT is planned again at every call).
--
-- Every push pays for this row, so it is written as cheaply as the same effect allows
-- (docs/performance/round-09.md, "A created report's effects, ninth round": 99 → 65 µs a call):
-- - a device that pushed before (every push but its first) takes a plain UPDATE, not the
--   upsert's speculative insertion (arbiter index probed, existing row locked, then
--   updated); the first push inserts, and a concurrent first push still meets the upsert;
-- - as the table's owner, without row-level security: the devices policies (own row; an
--   agency admin's SELECT of the agency's devices, a sub-select set up at every execution)
--   are replaced by what they come to for this statement: only the caller's own row
--   (`user_id = app.uid()`, the `own` policy's check), and no caller, no row (refused as
--   the policy refused it).
create or replace function app.note_device_push(client text, version text) returns void
language plpgsql security definer set search_path = app, pg_temp set plan_cache_mode = force_generic_plan as $$
begin
    update app.devices d set last_push = now(), app_version = coalesce(nullif(version, ''), d.app_version)
     where d.user_id = app.uid() and d.client_id = client;
    if not found then
        if app.uid() is null then
            raise exception 'new row violates row-level security policy for table "devices"' using errcode = '42501';
        end if;
        insert into app.devices as d (user_id, client_id, app_version, last_push)
        values (app.uid(), client, version, now())
        on conflict (user_id, client_id) do update set last_push = now(),
            app_version = coalesce(nullif(excluded.app_version, ''), d.app_version);
    end if;
end
$$;

-- What a push in one round trip does before its writes (WritePath applyFirstPush): the
-- push's lock, app.expect_first_push, the device named for the report history (0020) and
-- the device's row. In one function, so that it is one execution (a portal, a snapshot, an
-- executor started and ended, a result sent back), not four (docs/performance/round-07.md,
-- "A lone push's fixed cost, seventh round"); and when the push is one collection's new
-- documents, app.insert_documents' own statement runs it (`first_push_app_version`), one
-- execution fewer again. The device row may come before the writes: nothing reads it in
-- the push, and a failed push rolls it back with everything else.
--
-- `device_row` false: the worker wrote this device's row less than a minute ago with the
-- same app version (Sync/DevicePushes.swift), so the row is left as it is: its last push is
-- a minute coarse, as the back office shows it (docs/performance/round-17.md, "The
-- device's row a minute coarse"). The previous release's workers call without it (the
-- five arguments), and their call goes here: the five-argument form is dropped, else
-- their call would match both.
drop function if exists app.open_first_push(text, text, text[], text[], text[]);
create or replace function app.open_first_push(
    client_id text, app_version text, change_ids text[], partitions text[], collections text[],
    device_row boolean default true) returns void
language plpgsql set plan_cache_mode = force_generic_plan as $$
begin
    perform app.push_lock(client_id);
    perform app.expect_first_push(client_id, change_ids, partitions, collections);
    perform set_config('tideway.device', client_id, true);
    if device_row then
        perform app.note_device_push(client_id, app_version);
    end if;
end
$$;

-- New documents of one collection in one statement. A device that was offline pushes
-- mostly new documents (reports, photos, duty changes, messages); writing them one
-- app.apply_change at a time costs a savepoint, a failed UPDATE and a one-row INSERT per
-- document, and the one-row INSERT alone is about twice the per-row cost of a multi-row
-- one (the executor is set up per statement). The write path (WritePath.swift) sends here
-- the inserts of ids it found nowhere, already checked (schema, rules, write right).
--
-- Same outcomes as apply_change, which stays the definition: rows go in under the caller's
-- claims (row-level security), numbered by the partition clock, logged in the push log.
-- An id that turns out to exist (in a partition the caller cannot see, or written since)
-- and a statement that a rule refuses go through app.apply_change one by one, which
-- gives each its own result.
--
-- `docs` is one JSON array, the i-th document for ids[i]: the worker joins the documents it
-- serialized, where a jsonb[] made it escape every quote of every document into array
-- syntax (and PostgreSQL undo it) — ~0.1 ms of the worker's CPU for a lone report.
--
-- `guarded` false (a push in one round trip, WritePath.applyFirstPush): no savepoint around
-- the INSERT, so a refused statement fails the transaction and the worker applies the push
-- again the usual way, where the savepoint gives each change its answer. A savepoint is a
-- subtransaction: its own XID, its own WAL and commit bookkeeping, on every push.
-- `first_push_app_version` (with `guarded` false): this statement opens the push
-- (app.open_first_push, for its app version, '' when the device sent none; the write rights
-- asked are this statement's partitions') before its INSERT, when its
-- documents are the whole push: one top-level statement fewer per push
-- (docs/performance/round-16.md, "What a lone push's SQL adds to its INSERT"); with
-- `device_row` false it leaves the device's row as it is (app.open_first_push).
--
-- One static INSERT per collection (only those whose documents the client creates: not
-- `users`, whose documents the server creates, nor what only the server writes), written
-- out from app.collections (0004) at migration time like apply_change's branches: PL/pgSQL
-- keeps a static statement's plan for the connection, where EXECUTE parsed and planned it
-- at every call. The branches appear twice (with and without the savepoint); both are
-- the one template below. The push-log rows of the written documents go in with them, in
-- the same statement (a CTE): a statement of their own cost ~0.02 ms of executor set-up
-- per push (docs/performance/round-07.md, "A lone push's fixed cost, seventh round").
--
-- A report's facts (the columns of app.report_row_facts, Migrations/0108) are written by the
-- INSERT itself, from the document: computed as part of the statement, for every row at once,
-- where the BEFORE trigger (which then does not fire) started its query's executor per row
-- (docs/performance/round-12.md, "A report's facts computed by its push's INSERT"). The documents come
-- from `docs` by jsonb_array_elements, a column each fact reads, not `docs -> n` evaluated
-- again at every use of the document in the inlined facts.
do $do$
declare
    branches text := (
        select string_agg(format($b$
            when %1$L then
                with w as (
                    insert into sync.%2$I as t (id, partition, doc, seq, updated_by%3$s)
                    select d.id, d.p, d.doc, d.seq, app.uid()%4$s
                      from rows from (unnest(ids), unnest(partitions), unnest(app.ticks(partitions, %1$L)),
                                      jsonb_array_elements(docs)) with ordinality as d(id, p, seq, doc, n)%5$s
                     order by d.n
                    on conflict (id) do nothing
                    returning t.id, t.version),
                logged as (
                    insert into app.push_log (user_id, client_id, change_id, result)
                    select app.uid(), client_id, change_ids[d.n],
                           jsonb_build_object('changeId', change_ids[d.n], 'status', 'applied', 'version', w.version::text)
                      from w join unnest(ids) with ordinality as d(id, n) on d.id = w.id
                     where client_id is not null
                    on conflict do nothing)
                select array_agg(w.id), array_agg(w.version) into written, versions from w;
$b$, name, table_name,
                 case when name = 'reports' then ', ' || facts end,
                 case when name = 'reports' then ', f.' || replace(facts, ', ', ', f.') end,
                 case when name = 'reports' then E'\n                      cross join lateral app.report_row_facts(d.doc, false) f' end),
                 '' order by name)
          from app.collections,
               (select string_agg(attname, ', ' order by attnum) as facts
                  from pg_attribute where attrelid = 'app.report_row_facts'::regclass and attnum > 0 and not attisdropped) r
         where write_rule not in ('own-user', 'server'));
    gathered text := (select quote_literal(array_agg(name order by name)::text)
                        from app.collections where write_rule not in ('own-user', 'server'));
begin
    -- The forms before `first_push_app_version` and before `device_row`: a call of the
    -- previous release's workers would match both, so they go; they call this one.
    drop function if exists app.insert_documents(text, text, text[], text[], text[], jsonb, boolean);
    drop function if exists app.insert_documents(text, text, text[], text[], text[], jsonb, boolean, text);
    execute replace(replace($f$
create or replace function app.insert_documents(
    collection text, client_id text, change_ids text[], ids text[], partitions text[], docs jsonb,
    guarded boolean default true, first_push_app_version text default null, device_row boolean default true)
returns table (ord bigint, result jsonb)
language plpgsql set plan_cache_mode = force_generic_plan as $$
declare
    written text[];
    versions bigint[];
    i integer;
    targets text[];
begin
    if not coalesce(collection = any (@gathered@::text[]), false) then
        raise exception 'insert_documents: not for %', collection using errcode = 'TW422';
    end if;
    if first_push_app_version is not null then
        -- Each partition's write right asked once (app.can_write, ~20 µs a call): a push's
        -- documents are mostly all of one.
        targets := case when partitions[1] = all (partitions) then partitions[1:1] else partitions end;
        perform app.open_first_push(client_id, first_push_app_version, change_ids, targets,
                                    array_fill(collection, array[cardinality(targets)]), device_row);
    end if;
    if guarded then
        begin
            case collection
@branches@            end case;
        exception
            when insufficient_privilege or check_violation or not_null_violation or data_exception
                 or sqlstate 'TW403' or sqlstate 'TW404' or sqlstate 'TW422' then
                written := null;  -- nothing of the statement stays; one by one below
        end;
    else
        case collection
@branches@        end case;
    end if;
    written := coalesce(written, '{}');
    for i in 1 .. coalesce(array_length(ids, 1), 0) loop
        ord := i;
        if ids[i] = any(written) then
            result := jsonb_build_object('changeId', change_ids[i], 'status', 'applied',
                                         'version', versions[array_position(written, ids[i])]::text);
        else
            result := app.apply_change(collection, partitions[i], ids[i], 'insert', docs -> (i - 1), client_id, change_ids[i]);
        end if;
        return next;
    end loop;
end
$$;
    $f$, '@branches@', branches), '@gathered@', gathered);
end
$do$;

-- The previous release's form (documents as jsonb[], always guarded), for its workers while a
-- rolling upgrade replaces them (docs/operations.md: a changed function must accept what
-- the old workers pass). Nothing of this release calls it; drop it in the next release.
create or replace function app.insert_documents(
    collection text, client_id text, change_ids text[], ids text[], partitions text[], docs jsonb[])
returns table (ord bigint, result jsonb)
language sql as $$
    select * from app.insert_documents(collection, client_id, change_ids, ids, partitions, to_jsonb(docs))
$$;
