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

