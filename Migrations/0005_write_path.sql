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

-- app.apply_change itself is defined in 0015 (its final form: intents of chat, an insert
-- of an existing document as an update, static SQL per table).

-- A change refused before it reached the database (schema, size) is logged too, so that a
-- retry gets the first outcome.
create function app.log_rejection(client_id text, change_id text, outcome jsonb) returns jsonb
language sql as $$
    insert into app.push_log (user_id, client_id, change_id, result) values (app.uid(), client_id, change_id, outcome)
        on conflict do nothing;
    select outcome;
$$;
