-- The one write path: a change to one document, applied under the caller's claims (so
-- row-level security decides), numbered by the partition's clock, recorded in the push
-- log. Expected refusals come back as a result instead of an error, so that one rejected
-- change does not stop the others of a batch (the exception block is a savepoint).
-- `new_doc` is the whole document to store: for an update the server has already merged
-- the client's patch into the current document and checked the schema.
--
-- An insert of an id that exists in its partition is an UPDATE first, so that it needs only
-- the update right (a user's own `users` document may be updated, never inserted). A
-- users-document write carries the conversation intents of chat (0011), undone with the
-- change when it is rejected.
--
-- One static statement per table rather than dynamic SQL: PL/pgSQL plans static
-- statements once per connection, where EXECUTE plans on every call (measured about 2.6
-- times faster per change). The branches differ only in the table's name.
create function app.apply_change(
    collection text, p text, doc_id text, op text, new_doc jsonb,
    client_id text, change_id text, expected_version bigint default null, intents jsonb default null)
returns jsonb
language plpgsql as $$
declare
    new_version bigint;
    outcome jsonb;
    intent jsonb;
    moved boolean := false;
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
        -- A user's own copy of `conversations` is never stored as sent (see 0011).
        if collection = 'users' and new_doc is not null then
            new_doc := jsonb_set(new_doc, '{conversations}', app.render_conversations(app.uid()));
            stored := case when op = 'delete' then null else new_doc end;
        end if;
        case collection
        when 'reports' then
            if op = 'insert' then
                update sync.reports
                   set doc = new_doc, deleted = false, seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.reports as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                end if;
            else
                update sync.reports
                   set doc = stored, deleted = (stored is null), seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
        when 'photos' then
            if op = 'insert' then
                update sync.photos
                   set doc = new_doc, deleted = false, seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.photos as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                end if;
            else
                update sync.photos
                   set doc = stored, deleted = (stored is null), seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
        when 'dutyChanges' then
            if op = 'insert' then
                update sync.duty_changes
                   set doc = new_doc, deleted = false, seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.duty_changes as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                end if;
            else
                update sync.duty_changes
                   set doc = stored, deleted = (stored is null), seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
        when 'menuData' then
            if op = 'insert' then
                update sync.menu_data
                   set doc = new_doc, deleted = false, seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.menu_data as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                end if;
            else
                update sync.menu_data
                   set doc = stored, deleted = (stored is null), seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
        when 'mpas' then
            if op = 'insert' then
                update sync.mpas
                   set doc = new_doc, deleted = false, seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.mpas as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                end if;
            else
                update sync.mpas
                   set doc = stored, deleted = (stored is null), seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
        when 'users' then
            if op = 'insert' then
                update sync.users
                   set doc = new_doc, deleted = false, seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.users as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                end if;
            else
                update sync.users
                   set doc = stored, deleted = (stored is null), seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
        when 'chatsters' then
            if op = 'insert' then
                update sync.chatsters
                   set doc = new_doc, deleted = false, seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.chatsters as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                end if;
            else
                update sync.chatsters
                   set doc = stored, deleted = (stored is null), seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
        when 'chatMessages' then
            if op = 'insert' then
                update sync.chat_messages
                   set doc = new_doc, deleted = false, seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p
                returning version into new_version;
                if new_version is null then
                    insert into sync.chat_messages as t (id, partition, doc, seq, updated_by)
                    values (doc_id, p, new_doc, app.tick(p), app.uid())
                    on conflict (id) do update
                       set doc = excluded.doc, deleted = false, seq = excluded.seq, version = t.version + 1,
                           updated_at = now(), updated_by = excluded.updated_by
                     where t.partition = excluded.partition
                    returning version into new_version;
                    moved := new_version is null;
                end if;
            else
                update sync.chat_messages
                   set doc = stored, deleted = (stored is null), seq = app.tick(p), version = version + 1,
                       updated_at = now(), updated_by = app.uid()
                 where id = doc_id and partition = p and not deleted and (expected_version is null or version = expected_version)
                returning version into new_version;
            end if;
        end case;
        if moved then
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
