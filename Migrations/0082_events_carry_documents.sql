-- Events that carry the documents (sync-protocol.md, "Change events"): the functions are in
-- repeatable/0082_events_carry_documents.sql.

-- Every moment a login may have lost a partition (app.notify_revoked, repeatable/0013),
-- kept until the event publisher has closed that login's streams. An event carries
-- documents to whoever holds a partition's stream, so the publisher reads this table in
-- the same snapshot as the changes it is about to carry, and closes the streams named
-- here first: a change committed after a revocation never reaches the revoked login's
-- stream, also when the revocation's NOTIFY is late or was lost (no publisher listening).
create table app.stream_revocations (
    id bigint generated always as identity primary key,
    channels text not null,
    at timestamptz not null default now()
);
alter table app.stream_revocations enable row level security;
alter table app.stream_revocations force row level security;
