-- Write path fixes found by the sync end-to-end tests.
--
-- apply_change: an insert of an id that exists in its partition was an INSERT ... ON
-- CONFLICT DO UPDATE, which needs the INSERT right even when it only updates. The worker
-- may not insert `users` documents (the server creates them with the account), so a
-- replayed insert of one's own `users` document was refused as `forbidden` although the
-- contract applies it as an update. Now an existing document is updated first.

create or replace function app.apply_change(
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
            -- A replayed offline insert of an existing document (or tombstone) of this
            -- partition is an update of it: as an UPDATE, so that it needs only the update
            -- right (a user's own `users` document may be updated, never inserted).
            execute format($q$
                update sync.%1$I
                   set doc = $3, deleted = false, seq = app.tick($2), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = $1 and partition = $2
                returning version $q$, tbl)
                into new_version using doc_id, p, new_doc;
            if new_version is null then
                -- A new document. The WHERE keeps a document in the partition it was created in
                -- (a concurrent insert of the same id, or one in another partition).
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
