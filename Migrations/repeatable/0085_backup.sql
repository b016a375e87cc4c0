-- Backups (`tideway backup`, Sources/Backup): while one runs, it holds the session-level
-- advisory lock 'tideway-backup' from its database snapshot until every blob that snapshot
-- names is copied. The blob sweep asks here before removing a file: not while a backup
-- runs (the shared lock is only tried, never waited for, so the job runner is never held
-- up), and only when no photo names the content. A photo deleted after the backup's
-- snapshot thus keeps its bytes until they are in the copy.
create or replace function app.blob_removable(sha text) returns boolean
language sql volatile security definer set search_path = app, pg_temp as $$
    select not exists (select 1 from app.photo_blobs where sha256 = sha)
       and pg_try_advisory_xact_lock_shared(hashtextextended('tideway-backup', 0))
$$;
