-- The one write path: a change to one document, applied under the caller's claims (so
-- row-level security decides), numbered by the partition's clock, recorded in the push
-- log. Expected refusals come back as a result instead of an error, so that one rejected
-- change does not stop the others of a batch (the exception block is a savepoint).
--
-- `new_doc` is the whole document to store: for an update the server has already merged
-- the client's patch into the current document and checked the schema.
create function app.document_table(collection text) returns text
language sql immutable as $$
    select case collection
        when 'reports' then 'reports' when 'photos' then 'photos' when 'dutyChanges' then 'duty_changes'
        when 'menuData' then 'menu_data' when 'mpas' then 'mpas' when 'users' then 'users'
        when 'chatsters' then 'chatsters' when 'chatMessages' then 'chat_messages'
    end
$$;

create function app.apply_change(
    collection text, p text, doc_id text, op text, new_doc jsonb,
    client_id text, change_id text, expected_version bigint default null)
returns jsonb
language plpgsql as $$
declare
    tbl text := app.document_table(collection);
    new_version bigint;
    outcome jsonb;
begin
    if tbl is null then
        raise exception 'unknown collection' using errcode = 'TW422';
    end if;
    begin
        if op = 'insert' then
            -- A replayed offline insert of an existing document is an update of it; the
            -- WHERE keeps a document in the partition it was created in.
            execute format($q$
                insert into sync.%1$I as t (id, partition, doc, seq, updated_by)
                values ($1, $2, $3, app.tick($2), app.uid())
                on conflict (id) do update
                   set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                       updated_at = now(), updated_by = excluded.updated_by
                 where t.partition = excluded.partition
                returning version $q$, tbl)
                into new_version using doc_id, p, new_doc;
            if new_version is null then
                outcome := jsonb_build_object('status', 'rejected', 'error',
                    jsonb_build_object('code', 'invalid', 'message', 'a document cannot move to another partition'));
            end if;
        elsif op in ('update', 'delete') then
            execute format($q$
                update sync.%1$I
                   set doc = $3, deleted = ($3 is null), seq = app.tick($2), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = $1 and partition = $2 and not deleted and ($4::bigint is null or version = $4)
                returning version $q$, tbl)
                into new_version using doc_id, p, case when op = 'delete' then null else new_doc end, expected_version;
            if new_version is null then
                outcome := jsonb_build_object('status', 'rejected', 'error',
                    jsonb_build_object('code', 'not_found', 'message', 'no such document in this partition'));
            end if;
        else
            raise exception 'unknown op' using errcode = 'TW422';
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

-- A change refused before it reached the database (schema, size) is logged too, so that a
-- retry gets the first outcome.
create function app.log_rejection(client_id text, change_id text, outcome jsonb) returns jsonb
language sql as $$
    insert into app.push_log (user_id, client_id, change_id, result) values (app.uid(), client_id, change_id, outcome)
        on conflict do nothing;
    select outcome;
$$;
