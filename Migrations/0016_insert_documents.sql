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
create function app.insert_documents(
    collection text, client_id text, change_ids text[], ids text[], partitions text[], docs jsonb[])
returns table (ord bigint, result jsonb)
language plpgsql as $$
declare
    tbl text := app.document_table(collection);
    written text[];
    versions bigint[];
    i integer;
begin
    if tbl is null or collection in ('users', 'chatsters') then
        raise exception 'insert_documents: not for %', collection using errcode = 'TW422';
    end if;
    begin
        execute format($sql$
            with w as (
                insert into sync.%I as t (id, partition, doc, seq, updated_by)
                select d.id, d.p, d.doc, app.tick(d.p), app.uid()
                  from unnest($1, $2, $3) with ordinality as d(id, p, doc, n)
                 order by d.n
                on conflict (id) do nothing
                returning t.id, t.version)
            select array_agg(id), array_agg(version) from w$sql$, tbl)
        into written, versions
        using ids, partitions, docs;
    exception
        when insufficient_privilege or check_violation or not_null_violation or data_exception
             or sqlstate 'TW403' or sqlstate 'TW404' or sqlstate 'TW422' then
            written := null;  -- nothing of the statement stays; one by one below
    end;
    written := coalesce(written, '{}');
    if client_id is not null then
        insert into app.push_log (user_id, client_id, change_id, result)
        select app.uid(), client_id, change_ids[k],
               jsonb_build_object('changeId', change_ids[k], 'status', 'applied', 'version', versions[array_position(written, ids[k])]::text)
          from generate_subscripts(ids, 1) k
         where ids[k] = any(written)
        on conflict do nothing;
    end if;
    for i in 1 .. coalesce(array_length(ids, 1), 0) loop
        ord := i;
        if ids[i] = any(written) then
            result := jsonb_build_object('changeId', change_ids[i], 'status', 'applied',
                                         'version', versions[array_position(written, ids[i])]::text);
        else
            result := app.apply_change(collection, partitions[i], ids[i], 'insert', docs[i], client_id, change_ids[i]);
        end if;
        return next;
    end loop;
end
$$;
