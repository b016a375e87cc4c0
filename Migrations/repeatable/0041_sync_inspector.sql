-- The sync inspector (issue 7): admins read the push outcomes of their agency's users, and
-- ask why a user can or cannot read a document.

-- Agency admins see their own agency's users' push outcomes; global admins everyone's.
drop policy if exists push_log_admin_read on app.push_log;
create policy push_log_admin_read on app.push_log for select using (
    app.is_global_admin()
    or (app.role() = 'agencyAdmin'
        and exists (select 1 from app.users u where u.id = push_log.user_id and u.agency = app.agency())));

-- Why a user holds (or lacks) a right on a team partition, in words: their grants (their
-- own, everyone's, their agency's) and their role.
create or replace function app.explain_team_right(u app.users, p text) returns text
language sql stable security definer set search_path = app, pg_temp as $$
    select case when app.team_right_of(u.id, u.role, u.agency, p) = 0
                then 'a team partition is read by those granted a right on it (to them, their agency or everyone), the '
                     || 'owning agency''s admins and global admins; this user has no grant on team '
                     || coalesce((select quote_literal(t.name) from app.teams t where 'team=' || t.id = p), p)
                else 'this user reads team ' || coalesce((select quote_literal(t.name) from app.teams t where 'team=' || t.id = p), p)
                     || ' through ' || coalesce((
                         select string_agg(case g.grantee_kind when 'user' then 'their own ' || g."right" || ' grant'
                                                               when 'everyone' then 'a ' || g."right" || ' grant to everyone'
                                                               else 'a ' || g."right" || ' grant to agency ' || g.grantee end, ', ')
                           from app.grants g
                          where g.partition = p and ((g.grantee_kind = 'user' and g.grantee = u.id::text)
                                or g.grantee_kind = 'everyone' or (g.grantee_kind = 'agency' and g.grantee = u.agency))),
                         'no grant')
                     || case when u.role = 'globalAdmin' then ', and their role (global admins manage every team)'
                             when u.role = 'agencyAdmin' and exists (select 1 from app.teams t where 'team=' || t.id = p and t.agency = u.agency)
                             then ', and their role (an agency''s admins manage its teams)' else '' end
           end
$$;

-- Where a document lives and whether `target` may read it, with the rule that decides,
-- in words. Only for a user the caller manages (or anyone, for a global admin), and only
-- for documents in partitions the caller may read themselves.
-- The collections' tables are searched one by one, written out from app.collections (0004).
do $do$
begin
    execute replace($f$
create or replace function app.explain_access(target uuid, doc_id text)
returns table (collection text, partition text, deleted boolean, readable boolean, rule text)
language plpgsql stable security definer set search_path = app, pg_temp as $$
declare
    u app.users;
begin
    if not (app.is_global_admin() or app.may_manage_user(target)) then
        raise exception 'not allowed' using errcode = '42501';
    end if;
    select * into u from app.users where id = target;
    return query
    with found as (
        @unions@
    ), judged as (
        select f.c, f.p, f.gone, app.partition_kind(f.p) as kind,
               case app.partition_kind(f.p)
                   when 'agency' then u.role = 'globalAdmin' or substr(f.p, 8) = u.agency
                   when 'user' then substr(f.p, 6) = u.id::text
                   when 'all-users' then true
                   when 'conversation' then exists (
                       select 1 from app.conversation_members m
                        where m.conversation_id = substr(f.p, 14) and m.user_id = u.id and m.active)
                   when 'team' then app.team_right_of(u.id, u.role, u.agency, f.p) >= 1
                   else false
               end as rule_allows
          from found f
         where app.is_global_admin() or app.can_read(f.p)
    )
    select j.c, j.p, j.gone, u.active and j.rule_allows,
           case
               when not u.active then 'the user is deactivated, so they read nothing'
               when j.kind = 'agency' and u.role = 'globalAdmin' then 'global admins read every agency partition'
               when j.kind = 'agency' and j.rule_allows then 'members of an agency read its partition'
               when j.kind = 'agency' then 'an agency partition is read by that agency''s users and global admins; this user belongs to '
                                           || coalesce(u.agency, 'no agency')
               when j.kind = 'user' and j.rule_allows then 'a user reads their own user partition'
               when j.kind = 'user' then 'a user partition is read by that user alone'
               when j.kind = 'all-users' then 'every signed-in user reads the all-users partition'
               when j.kind = 'conversation' and j.rule_allows then 'active members read a conversation'
               when j.kind = 'team' then app.explain_team_right(u, j.p)
               else 'only active members read a conversation, and this user is not one'
           end
           || case when j.gone then ' (the document is deleted: pulls carry it as a delete)' else '' end
      from judged j
     order by j.c;
end
$$;
    $f$, '@unions@', (select string_agg(format($u$select %L as c, d.partition as p, d.deleted as gone from sync.%I d where d.id = doc_id$u$, name, table_name), E'\n        union all ' order by name) from app.collections));
end
$do$;