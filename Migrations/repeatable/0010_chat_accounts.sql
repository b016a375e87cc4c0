-- Chat, part 1: every account has its `users` document (partition user=<id>) and its public
-- `chatsters` profile (partition all-users=all-the-users), created in the account's own
-- transaction (server effect 1) and kept in step with it (effect 6). Presence is
-- repeatable/0013.

-- Writes a server-kept document: numbered by the partition clock like every write.
create or replace function app.put_document(tbl text, doc_id text, p text, new_doc jsonb) returns void
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    execute format($q$
        insert into sync.%1$I as t (id, partition, doc, seq) values ($1, $2, $3, app.tick($2))
        on conflict (id) do update set doc = excluded.doc, deleted = false, seq = excluded.seq,
            version = t.version + 1, updated_at = now()
        where t.doc is distinct from excluded.doc $q$, tbl)
    using doc_id, p, new_doc;
end
$$;

-- The public profile mirrors a few fields of the user's own document; rewritten only when
-- one of them changes (never for unread counts).
create or replace function app.chatster_of(user_doc jsonb) returns jsonb
language sql immutable as $$
    select jsonb_strip_nulls(jsonb_build_object(
        '_id', user_doc->'_id',
        'userName', user_doc->'userName',
        'displayName', coalesce(nullif(user_doc #>> '{userPreferences,displayName}', ''), user_doc->>'displayName'),
        'avatarThumbNail', user_doc #> '{userPreferences,avatarImage,thumbNail}',
        'presence', user_doc->'presence',
        'lastSeenAt', user_doc->'lastSeenAt'))
$$;

create or replace function app.users_after_create() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    user_doc jsonb := jsonb_build_object(
        '_id', new.id::text, 'userName', new.email, 'displayName', new.display_name,
        'presence', 'Off-Line', 'userPreferences', jsonb_build_object('displayName', new.display_name),
        'conversations', '[]'::jsonb);
begin
    perform app.put_document('users', new.id::text, 'user=' || new.id, user_doc);
    perform app.put_document('chatsters', new.id::text, 'all-users=all-the-users', app.chatster_of(user_doc));
    return new;
end
$$;
create or replace trigger users_after_create after insert on app.users for each row execute function app.users_after_create();

-- An account's email or display name changed: its documents follow.
create or replace function app.users_after_rename() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    update sync.users set doc = doc || jsonb_build_object('userName', new.email, 'displayName', new.display_name),
                          seq = app.tick(partition), version = version + 1, updated_at = now()
     where id = new.id::text;
    return new;
end
$$;
create or replace trigger users_after_rename after update of email, display_name on app.users
    for each row when (old.email is distinct from new.email or old.display_name is distinct from new.display_name)
    execute function app.users_after_rename();

create or replace function app.user_doc_after_update() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    if app.chatster_of(old.doc) is distinct from app.chatster_of(new.doc) then
        perform app.put_document('chatsters', new.id, 'all-users=all-the-users', app.chatster_of(new.doc));
    end if;
    return null;
end
$$;
create or replace trigger user_doc_after_update after update on sync.users for each row execute function app.user_doc_after_update();
