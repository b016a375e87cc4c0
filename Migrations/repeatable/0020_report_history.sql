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
-- One expression (concat skips a null field, as the string_agg over the fields it replaces
-- did).
--
-- A SQL function of one expression, declared stable like its body (`to_char`, `concat`), so
-- that PostgreSQL inlines it, with app.history_hash, into the statement that writes the
-- entries: no function call per entry. It was PL/pgSQL, a call per entry and its
-- expression prepared again in every transaction: ~10 µs more per entry
-- (docs/performance/round-09.md, "A created report's effects, ninth round"). Same bytes: the same
-- expression.
--
-- The length is cast to text explicitly: `integer || text` is anynonarray || text, which is
-- only stable (it calls the integer's output function through the type's I/O), and
-- PostgreSQL does not inline an immutable SQL function whose body is not immutable, so
-- every call parsed and planned the body (10 per history entry). `int4::text || text` is
-- immutable, so the function is inlined; the bytes are the same.
create or replace function app.history_field(f text) returns text
language sql immutable parallel safe
return octet_length(f)::text || ':' || f || E'\n';

create or replace function app.history_canonical(
    prev_hash text, report_id text, partition text, seq bigint, version bigint, user_id uuid,
    device text, at timestamptz, op text, change jsonb) returns text
language sql stable
return concat(app.history_field('tideway-report-history-v1'), app.history_field(prev_hash),
              app.history_field(report_id), app.history_field(partition), app.history_field(seq::text),
              app.history_field(version::text), app.history_field(coalesce(user_id::text, '')),
              app.history_field(device),
              app.history_field(to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')),
              app.history_field(op), app.history_field(coalesce(change::text, 'null')));

-- An entry's hash: hex SHA-256 of its canonical form (the one definition; the triggers and
-- the import use it).
create or replace function app.history_hash(
    prev_hash text, report_id text, partition text, seq bigint, version bigint, user_id uuid,
    device text, at timestamptz, op text, change jsonb) returns text
language sql stable
return encode(sha256(convert_to(app.history_canonical(prev_hash, report_id, partition, seq, version, user_id,
                                                      device, at, op, change), 'UTF8')), 'hex');

-- Who and from where an entry is written: the push's device (the worker sets
-- tideway.device), "server" when none.
create or replace function app.history_device() returns text
language sql stable
return coalesce(nullif(current_setting('tideway.device', true), ''), 'server');

-- An update, or a write that brings a deleted report back: one entry per row (updates come
-- one statement per document, app.apply_change).
create or replace function app.record_report_history() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    entry_op text;
    entry_change jsonb;
    previous text;
    entry_device text := app.history_device();
    entry_at timestamptz := clock_timestamp();
begin
    if old.deleted then
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
    previous := coalesce(previous, '');
    insert into app.report_history (report_id, partition, seq, version, user_id, device, at, op, change, prev_hash, hash)
    values (new.id, new.partition, new.seq, new.version, app.uid(), entry_device, entry_at, entry_op, entry_change,
            previous, app.history_hash(previous, new.id, new.partition, new.seq, new.version, app.uid(),
                                       entry_device, entry_at, entry_op, entry_change));
    return null;
end
$$;

-- New reports: the entries of one INSERT statement in one INSERT (a push of 25 new reports
-- is one statement, app.insert_documents), instead of a trigger call, a lookup and a
-- one-row INSERT per report. The statement's reports share one `at` (the moment the entries
-- are written) and one user and device. A new row's id may have history already (a report
-- deleted by hand, or compacted, and pushed again; an imported one): the chain goes on
-- from its last entry. Its row is new and uncommitted, so no other writer appends to that
-- chain meanwhile (a concurrent insert of the same id waits on the unique index).
--
-- The last entry's hash is read by a join, not a scalar sub-select in the lateral: the
-- sub-select made `prev` an expression holding a subplan, and PostgreSQL does not inline a
-- function that uses such an argument twice, so app.history_field(prev) ran as a SQL function
-- of its own: its body read and planned in every statement, executed per entry (~2% of a lone
-- push's backend CPU, docs/performance/round-12.md, "A report's facts computed by its push's INSERT").
-- The same value: the last entry's hash, '' when the report has none.
create or replace function app.record_report_inserts() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    entry_device text := app.history_device();
    entry_at timestamptz := clock_timestamp();
    entry_user uuid := app.uid();
begin
    insert into app.report_history (report_id, partition, seq, version, user_id, device, at, op, change, prev_hash, hash)
    select n.id, n.partition, n.seq, n.version, entry_user, entry_device, entry_at, 'insert', n.doc, l.prev,
           app.history_hash(l.prev, n.id, n.partition, n.seq, n.version, entry_user, entry_device, entry_at,
                            'insert', n.doc)
      from new_reports n
      left join lateral (select h.hash from app.report_history h where h.report_id = n.id
                          order by h.id desc limit 1) last on true
      cross join lateral (select coalesce(last.hash, '') as prev) l
     order by n.seq;
    return null;
end
$$;

create or replace trigger report_history_insert after insert on sync.reports
    referencing new table as new_reports
    for each statement execute function app.record_report_inserts();
create or replace trigger report_history_update after update on sync.reports
    for each row when (old.version is distinct from new.version or old.deleted is distinct from new.deleted)
    execute function app.record_report_history();
