-- Photos in the blob store (sync-protocol.md, Blobs; domain.md, server effect 8).
--
-- Files live under TIDEWAY_BLOB_ROOT, named by the SHA-256 of their bytes, so identical
-- photos are stored once. This table says which content each photo points at; a file that
-- no row names is garbage, removed by the sweep (`tideway sweep-blobs`, and `tideway jobs`
-- now and then). Uploads, offloads and the sweep take app.lock_blob(sha) while they make
-- or remove a file and until their transaction ends, so a sweep never removes a file that
-- a committing upload is about to name.
create table app.photo_blobs (
    photo_id text primary key,
    partition text not null,
    sha256 text not null check (sha256 ~ '^[0-9a-f]{64}$'),
    content_type text not null check (content_type in ('image/jpeg', 'image/png', 'image/webp')),
    bytes bigint not null check (bytes >= 0),
    stored_at timestamptz not null default now()
);
create index photo_blobs_sha on app.photo_blobs (sha256);
alter table app.photo_blobs enable row level security;
alter table app.photo_blobs force row level security;
grant select, insert, update on app.photo_blobs to tideway_worker;

-- The durable job queue. Rows are made only by triggers (the worker role has no insert
-- right) and read and updated only by the job runner, whose transactions carry the
-- claim role 'jobs' (app.as_job_runner); request transactions never do.
create table app.jobs (
    id bigserial primary key,
    kind text not null check (kind in ('offload_photo')),
    partition text not null,
    ref text not null,
    state text not null default 'pending' check (state in ('pending', 'done', 'failed')),
    attempts int not null default 0,
    run_after timestamptz not null default now(),
    last_error text,
    created_at timestamptz not null default now(),
    finished_at timestamptz
);
create unique index jobs_one_pending on app.jobs (kind, ref) where state = 'pending';
create index jobs_due on app.jobs (run_after, id) where state = 'pending';
alter table app.jobs enable row level security;
alter table app.jobs force row level security;
-- The runner forgets finished jobs after a week (failed ones stay for people to look at).
grant select, update, delete on app.jobs to tideway_worker;
