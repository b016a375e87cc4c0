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
create policy read on app.photo_blobs for select using (app.is_global_admin() or partition = 'agency=' || app.agency());
create policy write_insert on app.photo_blobs for insert with check (app.can_write(partition, 'photos'));
create policy write_update on app.photo_blobs for update using (app.can_write(partition, 'photos'))
    with check (app.can_write(partition, 'photos'));

create function app.lock_blob(sha text) returns void
language sql as $$ select pg_advisory_xact_lock(hashtextextended('tideway-blob:' || sha, 0)) $$;

-- For the sweep, which acts for no agency: whether any photo still names this content.
create function app.blob_in_use(sha text) returns boolean
language sql stable security definer set search_path = app, pg_temp as $$
    select exists (select 1 from app.photo_blobs where sha256 = sha)
$$;

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
grant select, update on app.jobs to tideway_worker;
create policy runner on app.jobs for all using (app.role() = 'jobs') with check (app.role() = 'jobs');

create function app.as_job_runner() returns void
language sql as $$
    select set_config('tideway.role', 'jobs', true), set_config('tideway.user_id', '', true),
           set_config('tideway.agency', '', true), set_config('tideway.device', 'jobs', true)
$$;

-- The claims of one job's document work: the server acting inside the job's partition
-- only (role 'service', the partition's agency, no user), so that row-level security
-- still confines what the job can read and write to that partition.
create function app.job_claims(job_id bigint) returns text
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    p text;
begin
    select partition into p from app.jobs where id = job_id;
    if p is null or app.partition_kind(p) <> 'agency' then
        raise exception 'no such job' using errcode = 'TW404';
    end if;
    perform set_config('tideway.role', 'service', true), set_config('tideway.user_id', '', true),
            set_config('tideway.agency', substr(p, 8), true), set_config('tideway.device', 'jobs', true);
    return p;
end
$$;

-- Enqueued in the writing transaction: a photo with inline bytes gets one pending job.
create function app.enqueue_photo_offload() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    insert into app.jobs (kind, partition, ref) values ('offload_photo', new.partition, new.id)
        on conflict (kind, ref) where state = 'pending' do nothing;
    perform pg_notify('tideway_jobs', 'offload_photo');
    return null;
end
$$;
create trigger photo_offload after insert or update on sync.photos
    for each row when (not new.deleted and new.doc ? 'picture')
    execute function app.enqueue_photo_offload();

-- A deleted photo no longer names its content (the sweep then removes the file if no
-- other photo names it).
create function app.forget_photo_blob() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    delete from app.photo_blobs where photo_id = new.id;
    return null;
end
$$;
create trigger photo_blob_forget after update on sync.photos
    for each row when (new.deleted and not old.deleted)
    execute function app.forget_photo_blob();

-- Deleting a report deletes its photos (those whose referencingReportID names it, in the
-- same partition): clients get their tombstones in the next pull, and their blobs go.
create function app.delete_report_photos() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    update sync.photos
       set doc = null, deleted = true, seq = app.tick(partition), version = version + 1,
           updated_at = now(), updated_by = app.uid()
     where partition = new.partition and not deleted and doc ->> 'referencingReportID' = new.id;
    return null;
end
$$;
create trigger report_photos_delete after update on sync.reports
    for each row when (new.deleted and not old.deleted)
    execute function app.delete_report_photos();
