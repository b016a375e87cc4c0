-- Chat, part 2: conversations. Membership and unread counts are server-side truth in
-- app.conversation_members; each member's `users` document shows a rendering of it, which
-- the server rewrites whenever the truth changes (effects 2–4). A client's own copy of
-- `conversations` is never stored as sent: what it changed is read as intents (create,
-- rename, add members, leave, reset unread) and the copy is rendered again.
--
-- Unread counts: an increment (a new message) and a reset (the member read it) are both
-- single-row updates of the member's row, so neither can lose the other. The rendered
-- documents are rewritten under a lock on each affected user's document, taken in id order
-- first, so that two transactions never render one user's document from stale counts.

-- A member's conversations as their `users` document shows them.
create or replace function app.render_conversations(member uuid) returns jsonb
language sql stable security definer set search_path = app, pg_temp as $$
    select coalesce(jsonb_agg(jsonb_build_object(
               'id', c.id, 'displayName', c.display_name, 'unreadCount', m.unread,
               'members', (select coalesce(jsonb_agg(jsonb_build_object(
                                   'userId', o.user_id::text, 'userName', u.email, 'displayName', u.display_name,
                                   'membershipStatus', 'Membership active') order by o.joined_at, o.user_id), '[]'::jsonb)
                             from app.conversation_members o join app.users u on u.id = o.user_id
                            where o.conversation_id = c.id and o.active))
             order by m.joined_at, c.id), '[]'::jsonb)
      from app.conversation_members m join app.conversations c on c.id = m.conversation_id
     where m.user_id = member and m.active
$$;

-- Locks the documents of these users (id order: no deadlocks between two such lockers).
create or replace function app.lock_user_documents(members uuid[]) returns void
language sql security definer set search_path = app, pg_temp as $$
    select null from sync.users where id = any(select unnest(members)::text) order by id for update
$$;

-- Rewrites each user's rendered conversations (their lock already held).
create or replace function app.render_user_documents(members uuid[]) returns void
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    update sync.users d
       set doc = jsonb_set(d.doc, '{conversations}', r.conversations),
           seq = app.tick(d.partition), version = d.version + 1, updated_at = now()
      from (select m, app.render_conversations(m) as conversations from unnest(members) m) r
     where d.id = r.m::text and d.doc->'conversations' is distinct from r.conversations;
end
$$;

create or replace function app.conversation_member_ids(conversation text) returns uuid[]
language sql stable security definer set search_path = app, pg_temp as $$
    select coalesce(array_agg(user_id order by user_id), '{}') from app.conversation_members where conversation_id = conversation
$$;

-- Members named by userId or userName (email); the names that match nobody come back too.
create or replace function app.resolve_members(refs jsonb, out known uuid[], out unknown text[])
language plpgsql stable security definer set search_path = app, pg_temp as $$
declare
    ref jsonb;
    who uuid;
begin
    known := '{}';
    unknown := '{}';
    for ref in select * from jsonb_array_elements(coalesce(refs, '[]'::jsonb)) loop
        who := null;
        if ref ? 'userId' and (ref->>'userId') ~ '^[0-9a-f-]{36}$' then
            select id into who from app.users where id = (ref->>'userId')::uuid and active;
        end if;
        if who is null and ref ? 'userName' then
            select id into who from app.users where lower(email) = lower(ref->>'userName') and active;
        end if;
        if who is null then
            unknown := unknown || coalesce(ref->>'userName', ref->>'userId', ref::text);
        elsif not who = any(known) then
            known := known || who;
        end if;
    end loop;
end
$$;

create or replace function app.require_member(conversation text) returns void
language plpgsql stable security definer set search_path = app, pg_temp as $$
begin
    if not app.is_member(conversation) then
        perform app.refuse('TW403', format('not a member of conversation %s', conversation));
    end if;
end
$$;

-- One intent of a user on their conversations: {"intent": "create"|"rename"|"addMembers"|
-- "leave"|"resetUnread", "id", "displayName"?, "members"?}. Refusals raise TW403/TW422 and
-- roll back to the write path's savepoint: the change is rejected, nothing is written.
create or replace function app.apply_conversation_intent(intent jsonb) returns void
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    conv text := intent->>'id';
    me uuid := app.uid();
    resolved record;
    everyone uuid[];
begin
    if me is null then
        raise exception 'not signed in' using errcode = '28000';
    end if;
    case intent->>'intent'
    when 'create' then
        if exists (select 1 from app.conversations where id = conv) then
            -- Listing a conversation one is not in grants nothing (unlike the original app).
            perform app.require_member(conv);
            return;
        end if;
        if app.partition_kind('conversation=' || conv) is null then
            perform app.refuse('TW422', 'a conversation id is 1–64 letters, digits, _ or -');
        end if;
        select * into resolved from app.resolve_members(intent->'members');
        if array_length(resolved.unknown, 1) > 0 then
            perform app.refuse('TW422', format('unknown members: %s', array_to_string(resolved.unknown, ', ')));
        end if;
        insert into app.conversations (id, display_name, created_by)
            values (conv, coalesce(nullif(intent->>'displayName', ''), conv), me);
        everyone := array(select distinct unnest(resolved.known || me) order by 1);
        perform app.lock_user_documents(everyone);
        insert into app.conversation_members (conversation_id, user_id)
            select conv, unnest(everyone);
        perform app.render_user_documents(everyone);
    when 'rename' then
        perform app.require_member(conv);
        everyone := app.conversation_member_ids(conv);
        perform app.lock_user_documents(everyone);
        update app.conversations set display_name = intent->>'displayName' where id = conv;
        perform app.render_user_documents(everyone);
    when 'addMembers' then
        perform app.require_member(conv);
        select * into resolved from app.resolve_members(intent->'members');
        if array_length(resolved.unknown, 1) > 0 then
            perform app.refuse('TW422', format('unknown members: %s', array_to_string(resolved.unknown, ', ')));
        end if;
        everyone := array(select distinct unnest(app.conversation_member_ids(conv) || resolved.known) order by 1);
        perform app.lock_user_documents(everyone);
        insert into app.conversation_members (conversation_id, user_id)
            select conv, unnest(resolved.known)
            on conflict (conversation_id, user_id) do update set active = true, left_at = null, unread = 0
            where not app.conversation_members.active;
        perform app.render_user_documents(everyone);
    when 'leave' then
        perform app.require_member(conv);
        everyone := app.conversation_member_ids(conv);
        perform app.lock_user_documents(everyone);
        update app.conversation_members set active = false, left_at = now(), unread = 0
         where conversation_id = conv and user_id = me;
        perform app.render_user_documents(everyone);
    when 'resetUnread' then
        perform app.require_member(conv);
        perform app.lock_user_documents(array[me]);
        update app.conversation_members set unread = 0 where conversation_id = conv and user_id = me;
        perform app.render_user_documents(array[me]);
    else
        perform app.refuse('TW422', 'unknown conversation intent');
    end case;
end
$$;

-- A new message counts as unread for every member but its author (effect 4); edits and
-- deletes change no counts.
-- The user document with one conversation's unread count set (unchanged if not listed).
create or replace function app.with_unread(user_doc jsonb, conversation text, unread int) returns jsonb
language sql immutable as $$
    select coalesce(
        (select jsonb_set(user_doc, array['conversations', (e.n - 1)::text, 'unreadCount'], to_jsonb(unread))
           from jsonb_array_elements(user_doc->'conversations') with ordinality e(v, n)
          where e.v->>'id' = conversation limit 1),
        user_doc)
$$;

create or replace function app.chat_message_after_insert() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    conv text := substr(new.partition, 14);
begin
    -- Documents first, in id order (see the top of this file), then the counts; each
    -- document gets its new count set in place, not a whole new rendering.
    perform app.lock_user_documents(array(
        select user_id from app.conversation_members
         where conversation_id = conv and active and user_id::text is distinct from new.doc->>'authorId'));
    with bumped as (
        update app.conversation_members set unread = unread + 1
         where conversation_id = conv and active and user_id::text is distinct from new.doc->>'authorId'
        returning user_id, unread)
    update sync.users d
       set doc = app.with_unread(d.doc, conv, bumped.unread),
           seq = app.tick(d.partition), version = d.version + 1, updated_at = now()
      from bumped
     where d.id = bumped.user_id::text;
    return null;
end
$$;
create or replace trigger chat_message_after_insert after insert on sync.chat_messages
    for each row execute function app.chat_message_after_insert();

-- app.apply_change (repeatable/0005) runs the intents of a users-document write inside its savepoint.
