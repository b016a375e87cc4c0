-- Report history, server effect 7 (the table and what an entry keeps: 0020_report_history.sql).

-- Read with the report's partition (app.readable_agency_partitions, repeatable/0004).
drop policy if exists read on app.report_history;
create policy read on app.report_history for select using (partition = any ((select app.readable_agency_partitions())::text[]));

-- The merge patch from `a` to `b` (both objects): changed keys with their new value,
-- removed keys as null, nested objects as nested patches.
create or replace function app.merge_diff(a jsonb, b jsonb) returns jsonb
language plpgsql immutable as $$
declare
    result jsonb := '{}';
    k text;
begin
    if a is null or b is null or jsonb_typeof(a) <> 'object' or jsonb_typeof(b) <> 'object' then
        return b;
    end if;
    for k in select key from jsonb_each(a) where not b ? key loop
        result := result || jsonb_build_object(k, null);
    end loop;
    for k in select key from jsonb_each(b) where not a ? key or a -> key is distinct from b -> key loop
        if jsonb_typeof(a -> k) = 'object' and jsonb_typeof(b -> k) = 'object' then
            result := result || jsonb_build_object(k, app.merge_diff(a -> k, b -> k));
        else
            result := result || jsonb_build_object(k, b -> k);
        end if;
    end loop;
    return result;
end
$$;

-- The canonical form an entry's hash covers: every field as `<byte length>:<bytes>\n`, in
-- this order, so that no two different entries serialize alike. Timestamps in UTC with
-- microseconds, `change` as PostgreSQL's jsonb text. HistoryChain.swift computes the same.
create or replace function app.history_canonical(
    prev_hash text, report_id text, partition text, seq bigint, version bigint, user_id uuid,
    device text, at timestamptz, op text, change jsonb) returns text
-- PL/pgSQL so that the query is planned once per connection: as an SQL function (a FROM
-- clause, so never inlined) it was parsed and planned at every history entry.
language plpgsql stable as $$
begin
    return (select string_agg(octet_length(f) || ':' || f || E'\n', '' order by n)
              from unnest(array['tideway-report-history-v1', prev_hash, report_id, partition, seq::text, version::text,
                                coalesce(user_id::text, ''), device,
                                to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), op,
                                coalesce(change::text, 'null')]) with ordinality as t(f, n));
end
$$;

create or replace function app.record_report_history() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    entry_op text;
    entry_change jsonb;
    previous text;
    entry_device text := coalesce(nullif(current_setting('tideway.device', true), ''), 'server');
    entry_at timestamptz := clock_timestamp();
begin
    if tg_op = 'INSERT' or old.deleted then
        entry_op := 'insert';
        entry_change := new.doc;
    elsif new.deleted then
        entry_op := 'delete';
    else
        entry_op := 'update';
        entry_change := app.merge_diff(old.doc, new.doc);
    end if;
    -- The row lock on the report (held until commit) orders writers of one report, so
    -- the last entry read here stays the last one.
    select h.hash into previous from app.report_history h where h.report_id = new.id order by h.id desc limit 1;
    insert into app.report_history (report_id, partition, seq, version, user_id, device, at, op, change, prev_hash, hash)
    values (new.id, new.partition, new.seq, new.version, app.uid(), entry_device, entry_at, entry_op, entry_change,
            coalesce(previous, ''),
            encode(sha256(convert_to(app.history_canonical(coalesce(previous, ''), new.id, new.partition, new.seq,
                new.version, app.uid(), entry_device, entry_at, entry_op, entry_change), 'UTF8')), 'hex'));
    return null;
end
$$;

create or replace trigger report_history_insert after insert on sync.reports
    for each row execute function app.record_report_history();
create or replace trigger report_history_update after update on sync.reports
    for each row when (old.version is distinct from new.version or old.deleted is distinct from new.deleted)
    execute function app.record_report_history();
