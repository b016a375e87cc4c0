-- Idle polls answered from the worker's memory (issue 22; the worker: Sources/Sync/
-- AuthCache.swift and ChangeHub.swift). A worker remembers which access tokens an idle check
-- found valid and which partitions they could read; what app.authenticate and app.can_read
-- read is watched here, in one place, by statement triggers, so that no path (a route, the
-- back office, an operator's psql) can change who may read what without every worker
-- hearing it on `tideway_auth`. A worker answers from memory only after a round trip on its
-- listening connection begun after the poll arrived (ChangeHub.barrier): PostgreSQL sends a
-- listener every notification committed before that round trip's statement ahead of its
-- answer, so a change committed before the poll always reaches the worker first.

-- Inserts are not watched: a new token or right never makes what a worker remembers wrong
-- (it only remembers tokens it saw valid and partitions it saw readable). No payload:
-- PostgreSQL folds a transaction's identical notifications into one.
create or replace function app.auth_changed() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    perform pg_notify('tideway_auth', '');
    return null;
end
$$;

-- The columns app.authenticate, app.can_read and what they call (app.is_member,
-- app.team_right_of) read. A user's last_login_at / last_active_at, a member's unread
-- count, a team's name or archived flag and a token's spent_at change often and decide
-- nothing of this (only refresh tokens are spent; the cache holds access tokens).
do $$
declare
    watched constant text[][] := array[
        ['tokens',               'hash, login_id, kind, expires_at'],
        ['logins',               'id, user_id, revoked_at'],
        ['users',                'id, agency, role, active'],
        ['agencies',             'key'],
        ['conversation_members', 'conversation_id, user_id, active'],
        ['teams',                'id, agency'],
        ['grants',               'partition, grantee_kind, grantee, "right"']];
begin
    for i in 1 .. array_length(watched, 1) loop
        execute format('create or replace trigger auth_changed after update of %s or delete or truncate on app.%I '
                       'for each statement execute function app.auth_changed()', watched[i][2], watched[i][1]);
    end loop;
end
$$;

-- What a photo download answers (app.blob_for_download, 0021), which a worker remembers per
-- photo (Sources/Blobs/BlobMemory.swift): the photo's stored content and partition, and that
-- the photo is not deleted. Row triggers with conditions, not statement triggers: every
-- write of a photo sets `deleted` and every upload's upsert sets the content's columns, and
-- only a change of what was answered may empty every worker's memory (a re-upload of the
-- same bytes, a new pictureURL, a tombstone purged, do not). Inserts are not watched: a
-- new photo or content row cannot make a remembered answer wrong (a photo's content is one
-- row, its id the key, so a second upload of a photo is an update).
create or replace trigger auth_changed after update of id, partition, deleted on sync.photos
    for each row when (not old.deleted and (new.deleted or new.id <> old.id or new.partition <> old.partition))
    execute function app.auth_changed();
create or replace trigger auth_changed_delete after delete on sync.photos
    for each row when (not old.deleted) execute function app.auth_changed();
create or replace trigger auth_changed_truncate after truncate on sync.photos
    for each statement execute function app.auth_changed();
create or replace trigger auth_changed after update on app.photo_blobs
    for each row when ((new.photo_id, new.partition, new.sha256, new.content_type, new.bytes)
                       is distinct from (old.photo_id, old.partition, old.sha256, old.content_type, old.bytes))
    execute function app.auth_changed();
create or replace trigger auth_changed_delete after delete on app.photo_blobs
    for each row execute function app.auth_changed();
create or replace trigger auth_changed_truncate after truncate on app.photo_blobs
    for each statement execute function app.auth_changed();

-- How long the caller's access token has left, in seconds (null when it is not a live
-- access token): how long the worker may remember it. Asked in the statement that calls
-- app.unchanged, which has checked the token.
create or replace function app.access_token_ttl(token_hash bytea) returns double precision
language sql stable security definer set search_path = app, pg_temp as $$
    select extract(epoch from t.expires_at - now())::double precision from app.tokens t
     where t.hash = token_hash and t.kind = 'access' and t.expires_at > now()
$$;
