-- `tideway import` (Sources/TidewayImport, issue 18): a report's history from before
-- Tideway (O-FISH's ChangeHistory) goes at the start of its chain, marked as imported
-- (device 'import', op 'update', seq and version 0: it happened before the report's first
-- version here). The import's own write of the report, through the write path, is then
-- appended by the history trigger (repeatable/0020) and links to the last imported entry,
-- so `tideway verify-history` checks one chain from the first imported entry on.
--
-- `entries`: [{"at": <ISO 8601>, "change": <jsonb>}, ...] in order. Nothing happens when the
-- report has history already (a second import of the same report adds nothing). Only the
-- importing superuser calls this: the worker has no right to it.
create or replace function app.import_report_history(report text, p text, entries jsonb) returns int
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    entry jsonb;
    previous text := '';
    entry_at timestamptz;
    next_hash text;
    added int := 0;
begin
    if exists (select 1 from app.report_history where report_id = report) then
        return 0;
    end if;
    for entry in select * from jsonb_array_elements(entries) loop
        entry_at := (entry ->> 'at')::timestamptz;
        next_hash := app.history_hash(previous, report, p, 0, 0, null, 'import', entry_at, 'update', entry -> 'change');
        insert into app.report_history (report_id, partition, seq, version, user_id, device, at, op, change, prev_hash, hash)
        values (report, p, 0, 0, null, 'import', entry_at, 'update', entry -> 'change', previous, next_hash);
        previous := next_hash;
        added := added + 1;
    end loop;
    return added;
end
$$;
revoke all on function app.import_report_history(text, text, jsonb) from public;
revoke all on function app.import_report_history(text, text, jsonb) from tideway_worker;
