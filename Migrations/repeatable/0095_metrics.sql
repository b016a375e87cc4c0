-- Levels `/metrics` reads from the database at scrape time (Sources/Web/Metrics.swift):
-- they are the same whichever worker answers, and true whatever process died. Security
-- definer: the worker role reads none of these tables whole (the job queue is the job
-- runner's, tokens and streams are per login under row-level security); only counts leave.
create or replace function app.metrics_levels() returns table (name text, value double precision)
language sql stable security definer set search_path = app, pg_temp as $$
    select 'tideway_jobs_queued', count(*)::float8 from app.jobs where state = 'pending'
    union all
    select 'tideway_jobs_oldest_age_seconds',
           coalesce(extract(epoch from now() - min(created_at)), 0)::float8 from app.jobs where state = 'pending'
    union all
    select 'tideway_jobs_failed', count(*)::float8 from app.jobs where state = 'failed'
    union all
    select 'tideway_sessions_active', count(*)::float8 from app.logins l
     where l.revoked_at is null
       and exists (select 1 from app.tokens t where t.login_id = l.id and t.expires_at > now() and t.spent_at is null)
    union all
    select 'tideway_event_streams_open', coalesce(sum(open), 0)::float8 from app.event_streams
    union all
    select 'tideway_blob_store_bytes', coalesce(sum(bytes), 0)::float8
      from (select distinct on (sha256) bytes from app.photo_blobs order by sha256) contents
$$;
revoke all on function app.metrics_levels() from public;
grant execute on function app.metrics_levels() to tideway_worker;
