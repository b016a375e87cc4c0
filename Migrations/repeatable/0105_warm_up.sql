-- Warm-up at start (issue 22; docs/performance/round-11.md, "A restart's first push and event"). A
-- backend's first push costs ~11 ms more of PostgreSQL CPU than the next: the write path's
-- relations, indexes, policies, triggers and PL/pgSQL functions are loaded, compiled and
-- planned in that backend at its first use, and all of it is kept for the connection's
-- life. A worker runs this once on each connection it warms at start (Sync/WarmUp.swift),
-- so that the first field device's push after a restart does not pay it.
--
-- It is a lone push of one new report, the usual push of a device back from sea, as
-- WritePath.applyFirstPush sends it (app.open_first_push, then app.insert_documents
-- unguarded), by a made-up officer of a made-up agency, and then undone: everything runs in
-- a block that always ends by raising, so PostgreSQL rolls it back (a subtransaction) even
-- if a caller committed. Nothing stays and nothing is sent: no report, history entry,
-- push-log entry or device row; the partition clock is a made-up partition's row, inserted
-- and rolled back (the clock rows are rows, not sequences: no real partition's number moves
-- or is even locked); the notifications app.ticks asks for are only delivered at commit.
-- What a rollback does not undo: the sequence of app.report_history's ids advances by one
-- (nextval is never rolled back). Those ids only order a report's own entries
-- (report_history_chain); no cursor, event or pull reads them (cursors are the partition
-- clocks, docs/sync-protocol.md), so the gap is invisible to clients, as the gap a failed
-- push leaves already is.
--
-- SECURITY INVOKER on purpose: it must run as the worker's role, under row-level security,
-- because a plan cached for one role is planned again for another when policies apply.
-- The made-up caller needs no row anywhere except for the device's row, whose user must
-- exist (a foreign key): that insert fails on it, after the statements it warms (the
-- update, the insert and its key check) have run, and only its own block is undone.
-- The claims of the made-up officer both warm-ups run as, for the caller's transaction only:
-- a new user id (also its login's) each time, of `agency`, which no agency has. The write
-- path's below, and the worker's pull of a partition no agency has (Sync/WarmUp.swift).
create or replace function app.claim_warm_up_officer(agency text) returns void
language sql as $$
    select set_config('tideway.user_id', made_up.id, true), set_config('tideway.role', 'officer', true),
           set_config('tideway.agency', agency, true), set_config('tideway.login_id', made_up.id, true)
      from (select gen_random_uuid()::text) as made_up(id)
$$;

create or replace function app.warm_up_write_path() returns void
language plpgsql as $$
declare
    tag constant text := gen_random_uuid()::text;
    p constant text := 'agency=warm-up-' || tag;
    client constant text := 'warm-up';
    report_id constant text := 'warm-up-' || tag;
    report constant jsonb := jsonb_build_object(
        '_id', 'warm-up-' || tag, 'draft', false, 'timestamp', '2026-01-01T10:00:00Z', 'date', '2026-01-01T09:00:00Z',
        'location', jsonb_build_array(9.3, -0.8),
        'reportingOfficer', jsonb_build_object('name', jsonb_build_object('first', 'Warm', 'last', 'Up'), 'email', 'warm-up@invalid'),
        'vessel', jsonb_build_object('name', 'Warm-up', 'homePort', 'Nowhere', 'nationality', 'GA', 'permitNumber', 'WU-1'),
        'captain', jsonb_build_object('name', 'Warm Up', 'license', 'WU-CAP'),
        'crew', jsonb_build_array(jsonb_build_object('name', 'Crew', 'license', 'WU-2')),
        'inspection', jsonb_build_object(
            'activity', jsonb_build_object('name', 'Fishing'),
            'actualCatch', jsonb_build_array(jsonb_build_object('fish', 'Tuna', 'number', 3, 'weight', 12.5, 'unit', 'kg')),
            'summary', jsonb_build_object(
                'safetyLevel', jsonb_build_object('level', 'Amber', 'amberReason', 'warm-up'),
                'violations', jsonb_build_array(jsonb_build_object(
                    'offence', jsonb_build_object('code', 'WU', 'explanation', 'warm-up'), 'disposition', 'Warning')))));
begin
    begin
        perform app.claim_warm_up_officer(substr(p, 8));
        begin
            perform app.open_first_push(client, 'warm-up', array['warm-up'], array[p], array['reports']);
        exception when foreign_key_violation then
            null;  -- the made-up caller's device row (above); the device for the history is set again below
        end;
        perform set_config('tideway.device', client, true);
        perform * from app.insert_documents('reports', client, array['warm-up'], array[report_id], array[p],
                                            jsonb_build_array(report), false);
        raise exception 'warm-up done' using errcode = 'TW2WU';
    exception when sqlstate 'TW2WU' then
        null;  -- undone: the only way out of the block above
    end;
end
$$;
