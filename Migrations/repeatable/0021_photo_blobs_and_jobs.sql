-- Photos in the blob store and the job queue (the tables: 0021_photo_blobs_and_jobs.sql).

-- Read and written with the photo's partition.
drop policy if exists read on app.photo_blobs;
create policy read on app.photo_blobs for select using (partition = any ((select app.readable_agency_partitions())::text[]));
drop policy if exists write_insert on app.photo_blobs;
create policy write_insert on app.photo_blobs for insert with check (app.can_write(partition, 'photos'));
drop policy if exists write_update on app.photo_blobs;
create policy write_update on app.photo_blobs for update using (app.can_write(partition, 'photos'))
    with check (app.can_write(partition, 'photos'));

create or replace function app.lock_blob(sha text) returns void
language sql as $$ select pg_advisory_xact_lock(hashtextextended('tideway-blob:' || sha, 0)) $$;

-- For the sweep, which acts for no agency: whether any photo still names this content.
create or replace function app.blob_in_use(sha text) returns boolean
language sql stable security definer set search_path = app, pg_temp as $$
    select exists (select 1 from app.photo_blobs where sha256 = sha)
$$;
drop policy if exists runner on app.jobs;
create policy runner on app.jobs for all using (app.role() = 'jobs') with check (app.role() = 'jobs');

-- The jobs due: pending, their backoff passed. One definition for the runner's claim
-- (JobRunner.claim takes the first by `run_after, id` and locks its row through the view)
-- and its idle check (app.job_runner_work, repeatable/0051). Read with the reader's rights
-- (security_invoker), so the policy above still decides what a runner sees.
create or replace view app.due_jobs with (security_invoker = true) as
    select j.id, j.run_after from app.jobs j where j.state = 'pending' and j.run_after <= now();
grant select, update on app.due_jobs to tideway_worker;

create or replace function app.as_job_runner() returns void
language sql as $$
    select set_config('tideway.role', 'jobs', true), set_config('tideway.user_id', '', true),
           set_config('tideway.agency', '', true), set_config('tideway.device', 'jobs', true)
$$;

-- The claims of one job's document work: the server acting inside the job's partition
-- only (role 'service', the partition's agency, no user), so that row-level security
-- still confines what the job can read and write to that partition.
create or replace function app.job_claims(job_id bigint) returns text
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    p text;
begin
    select partition into p from app.jobs where id = job_id;
    if p is null or app.partition_kind(p) <> 'agency' then
        perform app.refuse('TW404', 'no such job');
    end if;
    perform set_config('tideway.role', 'service', true), set_config('tideway.user_id', '', true),
            set_config('tideway.agency', substr(p, 8), true), set_config('tideway.device', 'jobs', true);
    return p;
end
$$;

-- Enqueued in the writing transaction: a photo with inline bytes gets one pending job.
-- No NOTIFY: the job runner takes due jobs every half second and does not listen
-- (Sources/Patrol/JobRunner.swift), and a notification no one listens to would still wake
-- every listening backend of the database.
create or replace function app.enqueue_photo_offload() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    insert into app.jobs (kind, partition, ref) values ('offload_photo', new.partition, new.id)
        on conflict (kind, ref) where state = 'pending' do nothing;
    return null;
end
$$;
create or replace trigger photo_offload after insert or update on sync.photos
    for each row when (not new.deleted and new.doc ? 'picture')
    execute function app.enqueue_photo_offload();

-- A deleted photo no longer names its content (the sweep then removes the file if no
-- other photo names it).
create or replace function app.forget_photo_blob() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    delete from app.photo_blobs where photo_id = new.id;
    return null;
end
$$;
create or replace trigger photo_blob_forget after update on sync.photos
    for each row when (new.deleted and not old.deleted)
    execute function app.forget_photo_blob();

-- Deleting a report deletes its photos (those whose referencingReportID names it, in the
-- same partition): clients get their tombstones in the next pull, and their blobs go.
create or replace function app.delete_report_photos() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    update sync.photos
       set doc = null, deleted = true, seq = app.tick(partition), version = version + 1,
           updated_at = now(), updated_by = app.uid()
     where partition = new.partition and not deleted and doc ->> 'referencingReportID' = new.id;
    return null;
end
$$;
create or replace trigger report_photos_delete after update on sync.reports
    for each row when (new.deleted and not old.deleted)
    execute function app.delete_report_photos();

-- A blob download's one statement (BlobRoutes.download), its own transaction: the caller's
-- token is checked (app.authenticate: an unknown, expired or revoked token fails here as
-- everywhere), then the photo's stored content is read if the caller may read the photo's
-- partition now (app.can_read, as app.unchanged does). What the worker remembers of its
-- answer is forgotten on every change that could make it wrong (0094), so a revoked token,
-- a user moved to another agency or a photo moved out of reach is refused at the next
-- request. One row: the caller (for the request's log line), with
-- null content when the photo has none the caller may see. PL/pgSQL, security definer:
-- its query is planned once per connection, and one app.can_read of one partition replaces
-- the two tables' read policies (the owner reads past row-level security, so the check is
-- the function's own). It replaces BEGIN, the claims statement, the query and COMMIT
-- (docs/performance/round-02.md, "Blobs, this round"). It also answers the photo's partition and
-- the token's remaining life (app.access_token_ttl, 0094): what the worker remembers to
-- answer the next downloads from memory (Sources/Blobs/BlobMemory.swift), emptied by the
-- triggers of 0094 (which watch the photo and blob columns read here too).
do $$
begin
    -- Until issue 22's fifth round it answered neither; a return type cannot be replaced in place.
    if not (select 'ttl' = any (proargnames) from pg_proc
             where oid = to_regprocedure('app.blob_for_download(bytea, text)')) then
        drop function app.blob_for_download(bytea, text);
    end if;
end
$$;
create or replace function app.blob_for_download(token_hash bytea, photo text)
returns table (user_id uuid, sha256 text, content_type text, bytes bigint, partition text, ttl double precision)
language plpgsql security definer set search_path = app, pg_temp as $$
#variable_conflict use_column
declare
    caller uuid;
begin
    select a.user_id into caller from app.authenticate(token_hash, 'access') a;
    return query
        select caller, b.sha256, b.content_type, b.bytes, b.partition,
               case when b.sha256 is not null then app.access_token_ttl(token_hash) end
          from (values (1)) as one
          left join (app.photo_blobs b
                     join sync.photos p on p.id = b.photo_id and p.partition = b.partition and not p.deleted)
            on b.photo_id = photo and app.can_read(b.partition);
end
$$;
