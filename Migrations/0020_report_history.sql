-- Server effect 7: every applied write to a report appends an entry to its history, in
-- the writing transaction, with a SHA-256 chain so that an edited, removed or reordered
-- entry is detectable (`tideway verify-history`).
--
-- What an entry keeps as `change`: the whole document for an insert, null for a delete,
-- and for an update the RFC 7396 merge patch that turns the previous document into the
-- new one, computed here from the two stored documents. The write path sends apply_change
-- the merged document (after the schema's normalization and the server's rules), so the
-- computed patch is what really changed, whoever wrote (sync, back office, server).
-- A merge patch cannot say "set to null" (null removes); stored documents drop null
-- optional values at validation, so nothing is lost in practice.

create table app.report_history (
    id bigserial primary key,
    report_id text not null,
    partition text not null,
    -- The partition clock value and document version the write got.
    seq bigint not null,
    version bigint not null,
    user_id uuid,
    -- The push's clientId, "web" for the back office, "server" for the server's own writes.
    device text not null,
    at timestamptz not null,
    op text not null check (op in ('insert', 'update', 'delete')),
    change jsonb,
    -- Hex SHA-256 of the previous entry of the same report ('' for the first).
    prev_hash text not null,
    hash text not null
);
create index report_history_chain on app.report_history (report_id, id);
create index report_history_partition on app.report_history (partition, at);

alter table app.report_history enable row level security;
alter table app.report_history force row level security;
-- Readable with the report's partition; no write grant at all: only the trigger (run as the
-- owner) appends.
grant select on app.report_history to tideway_worker;
create policy read on app.report_history for select using (app.is_global_admin() or partition = 'agency=' || app.agency());

-- The merge patch from `a` to `b` (both objects): changed keys with their new value,
-- removed keys as null, nested objects as nested patches.
create function app.merge_diff(a jsonb, b jsonb) returns jsonb
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
create function app.history_canonical(
    prev_hash text, report_id text, partition text, seq bigint, version bigint, user_id uuid,
    device text, at timestamptz, op text, change jsonb) returns text
language sql stable as $$
    select string_agg(octet_length(f) || ':' || f || E'\n', '' order by n)
      from unnest(array['tideway-report-history-v1', prev_hash, report_id, partition, seq::text, version::text,
                        coalesce(user_id::text, ''), device,
                        to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), op,
                        coalesce(change::text, 'null')]) with ordinality as t(f, n)
$$;

create function app.record_report_history() returns trigger
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

create trigger report_history_insert after insert on sync.reports
    for each row execute function app.record_report_history();
create trigger report_history_update after update on sync.reports
    for each row when (old.version is distinct from new.version or old.deleted is distinct from new.deleted)
    execute function app.record_report_history();

-- Reports written before this migration start their chain with their current state.
insert into app.report_history (report_id, partition, seq, version, user_id, device, at, op, change, prev_hash, hash)
select id, partition, seq, version, updated_by, 'migration', updated_at, case when deleted then 'delete' else 'insert' end,
       doc, '', encode(sha256(convert_to(app.history_canonical('', id, partition, seq, version, updated_by, 'migration',
           updated_at, case when deleted then 'delete' else 'insert' end, doc), 'UTF8')), 'hex')
  from sync.reports order by id;
