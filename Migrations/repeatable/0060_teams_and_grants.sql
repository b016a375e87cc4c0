-- Teams and grants (issue 17; the tables: 0060_teams_and_grants.sql). The rules of the
-- team partitions themselves (app.team_right_of, app.team_right, app.team_partitions, and
-- the team branches of app.can_read, app.can_write and the collections' policies) stand
-- with the other partition kinds' in repeatable/0004_sync_documents.sql. Here: who sees
-- teams and grants, the only functions that write them, revocation, and the server-side
-- assignment of an agency's tasks to its teams.

-- Teams are seen by the owning agency's users (the list of teams every member may join),
-- by anyone holding a right on them, and by global admins. Grants are seen by their
-- grantees and by the team's managers.
drop policy if exists teams_read on app.teams;
create policy teams_read on app.teams for select using (
    agency = app.agency() or app.is_global_admin()
    or (select app.team_partitions(1)) ? ('team=' || id::text));
drop policy if exists grants_read on app.grants;
create policy grants_read on app.grants for select using (
    (grantee_kind = 'user' and grantee = app.uid()::text)
    or (grantee_kind = 'everyone' and app.uid() is not null)
    or (grantee_kind = 'agency' and grantee = app.agency())
    or app.team_right(partition) >= 3);

-- The caller's email, for the audit log's rows.
create or replace function app.caller_email() returns text
language sql stable security definer set search_path = app, pg_temp as $$
    select coalesce((select email from app.users where id = app.uid()), '')
$$;

-- A team's grants with who each grantee is (a user's email and name, which the users'
-- own policy would hide from an officer who manages a joint team): for its managers only.
create or replace function app.team_grants(p text)
returns table (partition text, grantee_kind text, grantee text, "right" text, granted_at timestamptz,
               email text, display_name text)
language sql stable security definer set search_path = app, pg_temp as $$
    select g.partition, g.grantee_kind, g.grantee, g."right", g.granted_at, u.email, nullif(u.display_name, '')
      from app.grants g left join app.users u on g.grantee_kind = 'user' and u.id::text = g.grantee
     where g.partition = p and app.team_right(p) >= 3
     order by g.rank desc, g.grantee_kind, u.email, g.grantee
$$;

-- The user a manager names by email in the back office's grant form (null: nobody active).
create or replace function app.user_for_grant(p text, user_email text) returns uuid
language plpgsql stable security definer set search_path = app, pg_temp as $$
begin
    if app.team_right(p) < 3 then
        perform app.refuse('TW403', 'only the team''s managers grant and revoke');
    end if;
    return (select id from app.users where lower(email) = lower(user_email) and active);
end
$$;

-- Creates a team of `team_agency`: its admins and global admins may. The creator becomes
-- its first manager.
--
-- The manager's grant goes in before the team: the directory's triggers (repeatable/0061)
-- refresh a team's listing after each of the two inserts, and the grant's refresh, finding
-- no team yet, writes nothing, so the team's insert writes its listing once, with its
-- manager. The other order wrote it twice (without, then with the manager): two versions
-- and two ticks of the agency's clock, two changes for every device of the agency to pull.
create or replace function app.create_team(team_agency text, team_name text, team_description text default '')
returns uuid
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    new_id uuid := gen_random_uuid();
begin
    if not (app.is_global_admin() or (app.role() = 'agencyAdmin' and team_agency = app.agency())) then
        perform app.refuse('TW403', 'only the agency''s admins create its teams');
    end if;
    if not exists (select 1 from app.agencies where key = team_agency) then
        perform app.refuse('TW404', 'no such agency');
    end if;
    if length(coalesce(team_name, '')) not between 1 and 200 then
        perform app.refuse('TW422', 'a team''s name is 1 to 200 characters');
    end if;
    insert into app.grants (partition, grantee_kind, grantee, "right", granted_by)
        values ('team=' || new_id, 'user', app.uid()::text, 'manage', app.uid());
    insert into app.teams (id, agency, name, description, created_by)
        values (new_id, team_agency, team_name, coalesce(team_description, ''), app.uid());
    insert into app.audit_log (actor_email, action, target, detail)
        values (app.caller_email(), 'team.create', 'team=' || new_id, jsonb_build_object('agency', team_agency, 'name', team_name));
    return new_id;
end
$$;

-- Renames, describes, archives or unarchives a team: its managers.
create or replace function app.update_team(p text, new_name text, new_description text, new_archived boolean)
returns void
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    t app.teams;
begin
    if app.partition_kind(p) is distinct from 'team' then
        perform app.refuse('TW422', 'not a team partition');
    end if;
    select * into t from app.teams where id = substr(p, 6)::uuid;
    if not found or app.team_right(p) < 1 then
        perform app.refuse('TW404', 'no such team');
    end if;
    if app.team_right(p) < 3 then
        perform app.refuse('TW403', 'only the team''s managers change it');
    end if;
    if length(coalesce(new_name, t.name)) not between 1 and 200 then
        perform app.refuse('TW422', 'a team''s name is 1 to 200 characters');
    end if;
    update app.teams set name = coalesce(new_name, name), description = coalesce(new_description, description),
                         archived = coalesce(new_archived, archived)
     where id = t.id;
    insert into app.audit_log (actor_email, action, target, detail)
        values (app.caller_email(), case when new_archived is not null and new_archived <> t.archived
                     then case when new_archived then 'team.archive' else 'team.unarchive' end else 'team.update' end,
                p, jsonb_strip_nulls(jsonb_build_object('name', new_name, 'description', new_description, 'archived', new_archived)));
end
$$;

-- The checks common to granting and revoking: a team partition that exists, which the
-- caller manages, and a grantee that is one.
create or replace function app.check_grant(p text, kind text, who text) returns void
language plpgsql stable security definer set search_path = app, pg_temp as $$
begin
    if app.partition_kind(p) is distinct from 'team' then
        perform app.refuse('TW422', 'only team partitions are granted');
    end if;
    if not exists (select 1 from app.teams where id = substr(p, 6)::uuid) or app.team_right(p) < 1 then
        perform app.refuse('TW404', 'no such team');
    end if;
    if app.team_right(p) < 3 then
        perform app.refuse('TW403', 'only the team''s managers grant and revoke');
    end if;
    if kind is null or kind not in ('user', 'everyone', 'agency') then
        perform app.refuse('TW422', 'a grantee is a user, everyone or an agency');
    end if;
    if kind = 'everyone' and coalesce(who, '') <> '' then
        perform app.refuse('TW422', 'a grant to everyone names nobody');
    end if;
    if kind = 'user' and (coalesce(who, '') !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                          or not exists (select 1 from app.users where id = who::uuid and active)) then
        perform app.refuse('TW404', 'no such user');
    end if;
    if kind = 'agency' and not exists (select 1 from app.agencies where key = who) then
        perform app.refuse('TW404', 'no such agency');
    end if;
end
$$;

-- Gives (or changes) one grantee's right on a team partition. Managers only; no right above
-- manage; the last manager cannot be lowered. Answers the right now held.
create or replace function app.set_grant(p text, kind text, who text, new_right text) returns text
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    who_key text := case when kind = 'everyone' then '' else who end;
    before text;
begin
    perform app.check_grant(p, kind, who_key);
    if new_right is null or new_right not in ('read', 'write', 'manage') then
        perform app.refuse('TW422', 'a right is read, write or manage: nothing above manage');
    end if;
    -- One grant change of a team at a time, so that "the last manager" is counted right.
    perform 1 from app.teams where id = substr(p, 6)::uuid for update;
    select "right" into before from app.grants where partition = p and grantee_kind = kind and grantee = who_key;
    if before = 'manage' and new_right <> 'manage'
       and not exists (select 1 from app.grants where partition = p and "right" = 'manage'
                          and (grantee_kind, grantee) <> (kind, who_key)) then
        perform app.refuse('TW409', 'the last manager of a team cannot be removed');
    end if;
    insert into app.grants (partition, grantee_kind, grantee, "right", granted_by)
        values (p, kind, who_key, new_right, app.uid())
        on conflict (partition, grantee_kind, grantee)
        do update set "right" = excluded."right", granted_by = excluded.granted_by, granted_at = now();
    insert into app.audit_log (actor_email, action, target, detail)
        values (app.caller_email(), 'grant.set', p, jsonb_build_object('granteeKind', kind, 'grantee', who_key, 'right', new_right, 'before', before));
    return new_right;
end
$$;

-- Takes a grantee's right away. Managers only; not the last manager. True when there was one.
create or replace function app.revoke_grant(p text, kind text, who text) returns boolean
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    who_key text := case when kind = 'everyone' then '' else who end;
    before text;
begin
    perform app.check_grant(p, kind, who_key);
    perform 1 from app.teams where id = substr(p, 6)::uuid for update;
    select "right" into before from app.grants where partition = p and grantee_kind = kind and grantee = who_key;
    if before is null then
        return false;
    end if;
    if before = 'manage' and not exists (select 1 from app.grants where partition = p and "right" = 'manage'
                                            and (grantee_kind, grantee) <> (kind, who_key)) then
        perform app.refuse('TW409', 'the last manager of a team cannot be removed');
    end if;
    delete from app.grants where partition = p and grantee_kind = kind and grantee = who_key;
    insert into app.audit_log (actor_email, action, target, detail)
        values (app.caller_email(), 'grant.revoke', p, jsonb_build_object('granteeKind', kind, 'grantee', who_key, 'before', before));
    return true;
end
$$;

-- The caller's rights on every team partition they may open, and where each comes from:
-- their own grant, an everyone-grant, their agency's grant, or their role (an agency's
-- admins manage its teams, global admins all).
create or replace function app.my_grants()
returns table (partition text, team_name text, team_agency text, archived boolean, "right" text, via text[])
language sql stable security definer set search_path = app, pg_temp as $$
    with sources as (
        select g.partition as p, g.rank::int as r, g.grantee_kind as via from app.grants g
         where app.uid() is not null
           and ((g.grantee_kind = 'user' and g.grantee = app.uid()::text)
                or (g.grantee_kind = 'everyone' and g.grantee = '')
                or (g.grantee_kind = 'agency' and g.grantee = app.agency()))
        union all
        select 'team=' || t.id, 3, case when app.is_global_admin() then 'globalAdmin' else 'agencyAdmin' end
          from app.teams t
         where app.uid() is not null and (app.is_global_admin() or (app.role() = 'agencyAdmin' and t.agency = app.agency())))
    select s.p, t.name, t.agency, t.archived,
           case max(s.r) when 1 then 'read' when 2 then 'write' else 'manage' end,
           array_agg(distinct s.via order by s.via)
      from sources s join app.teams t on 'team=' || t.id = s.p
     group by s.p, t.name, t.agency, t.archived
     order by t.name, s.p
$$;

-- Losing a team: the streams of every login that no longer reads it close (their
-- reconnect is authorized afresh and refused), as for the other kinds (0013). A grant
-- lowered to read, or a grant whose grantee still reads through another, closes nothing.
create or replace function app.grants_after_revoke() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    u record;
begin
    for u in select x.id, x.role, x.agency from app.users x
              where x.active
                and case old.grantee_kind when 'user' then x.id::text = old.grantee
                                          when 'agency' then x.agency = old.grantee
                                          else true end loop
        if app.team_right_of(u.id, u.role, u.agency, old.partition) = 0 then
            perform app.notify_revoked(app.login_channels(u.id));
        end if;
    end loop;
    return null;
end
$$;
create or replace trigger grants_after_revoke after delete on app.grants
    for each row execute function app.grants_after_revoke();

-- Server-side assignment. An agency admin writes an `agencyTasks` document naming one of
-- the agency's teams (`team`: its id); in the same transaction the server keeps a copy,
-- same id, in that team's `tasks` with `assignment` saying where it came from. The team
-- works on the copy; its status flows back to the agency's document. Naming another team
-- moves the copy; deleting the task, or naming no team, deletes it.
create or replace function app.agency_tasks_assign() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    old_team text := case when tg_op = 'UPDATE' and not old.deleted then old.doc->>'team' end;
    new_team text := case when not new.deleted then new.doc->>'team' end;
    target text;
    copy jsonb;
    current jsonb;
begin
    -- The flow-back of a team's status (below) changes nothing the copy needs.
    if pg_trigger_depth() > 1 then
        return null;
    end if;
    if new_team is not null then
        if new_team !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
           or not exists (select 1 from app.teams t where t.id = new_team::uuid and 'agency=' || t.agency = new.partition
                                                     and not t.archived) then
            perform app.refuse('TW422', 'team: not one of this agency''s open teams');
        end if;
    end if;
    if old_team is not null and old_team is distinct from new_team then
        update sync.tasks set doc = null, deleted = true, seq = app.tick(partition), version = version + 1,
                              updated_at = now(), updated_by = app.uid()
         where id = new.id and partition = 'team=' || old_team and not deleted;
    end if;
    if new_team is not null then
        target := 'team=' || new_team;
        select t.doc into current from sync.tasks t where t.id = new.id and t.partition = target;
        -- The agency's fields win; fields only the team wrote stay.
        copy := coalesce(current, '{}'::jsonb) || (new.doc - 'team')
                || jsonb_build_object('assignment', jsonb_build_object('agency', substr(new.partition, 8)));
        if exists (select 1 from sync.tasks t where t.id = new.id and t.partition <> target)
           or (current is null and exists (select 1 from sync.tasks t where t.id = new.id and not t.deleted)) then
            perform app.refuse('TW422', 'a task with this id already exists in another team');
        end if;
        if current is not null and not (current ? 'assignment') then
            perform app.refuse('TW422', 'a task with this id already exists in the team');
        end if;
        if current is distinct from copy then
            insert into sync.tasks as t (id, partition, doc, seq, updated_by)
                values (new.id, target, copy, app.tick(target), app.uid())
                on conflict (id) do update set doc = excluded.doc, deleted = false, seq = excluded.seq,
                    version = t.version + 1, updated_at = now(), updated_by = excluded.updated_by
                 where t.partition = excluded.partition;
        end if;
    end if;
    return null;
end
$$;
create or replace trigger agency_tasks_assign after insert or update on sync.agency_tasks
    for each row execute function app.agency_tasks_assign();

-- Clients never write `assignment` nor the copies' existence: a task that names one, or
-- takes the id of an agency's task, or deletes a copy, is refused (forbidden). Only the
-- trigger above (a nested statement) writes them.
create or replace function app.tasks_guard() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    if pg_trigger_depth() > 1 then
        return new;
    end if;
    if tg_op = 'INSERT' then
        if new.doc ? 'assignment' or exists (select 1 from sync.agency_tasks a where a.id = new.id) then
            perform app.refuse('TW403', 'only the server copies an agency''s tasks into a team');
        end if;
    elsif old.doc ? 'assignment' then
        if new.deleted then
            perform app.refuse('TW403', 'an assigned task is deleted by its agency');
        end if;
        if new.doc->'assignment' is distinct from old.doc->'assignment' then
            perform app.refuse('TW403', 'only the server writes a task''s assignment');
        end if;
    elsif new.doc ? 'assignment' or (old.deleted and exists (select 1 from sync.agency_tasks a where a.id = new.id)) then
        perform app.refuse('TW403', 'only the server copies an agency''s tasks into a team');
    end if;
    return new;
end
$$;
create or replace trigger tasks_guard before insert or update on sync.tasks
    for each row execute function app.tasks_guard();

-- The team's status of an assigned task flows back to the agency's document.
create or replace function app.tasks_flow_back() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    if pg_trigger_depth() > 1 or new.deleted or not (new.doc ? 'assignment')
       or new.doc->'status' is not distinct from old.doc->'status' then
        return null;
    end if;
    update sync.agency_tasks
       set doc = case when new.doc ? 'status' then jsonb_set(doc, '{status}', new.doc->'status') else doc - 'status' end,
           seq = app.tick(partition), version = version + 1, updated_at = now(), updated_by = app.uid()
     where id = new.id and partition = 'agency=' || (new.doc #>> '{assignment,agency}') and not deleted
       and doc->'status' is distinct from new.doc->'status';
    return null;
end
$$;
create or replace trigger tasks_flow_back after update on sync.tasks
    for each row execute function app.tasks_flow_back();
