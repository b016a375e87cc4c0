-- The teams' directory (issue 17; the table: 0061_team_directory.sql): one server-written
-- `teamDirectory` document per team in the partition of its agency, which every signed-in
-- user of that agency syncs — the common set where officers find the teams before any of
-- them is opened. A joint task force is listed, besides, in the partition of every agency
-- it reaches (agencies of members given a right by name, agencies given a right as a
-- whole) under the id `<team id>@<agency key>` (a document id is unique per collection).
-- What a listing shows is the team's name, description, owning agency, archived flag, and
-- its members' public profiles (user id, display name, agency, right) — the display names
-- every signed-in user already sees in `chatsters` — never an email. Kept in the
-- transaction of every change to a team, a grant or a member's name, agency or activity.

-- The listings one team should have now: (document id, partition, document).
create or replace function app.team_directory_of(team_id uuid)
returns table (doc_id text, partition text, doc jsonb)
language sql stable security definer set search_path = app, pg_temp as $$
    with team as (select * from app.teams where id = team_id),
    members as (
        select u.id, u.display_name, u.agency, g.rank, g."right"
          from app.grants g join app.users u on u.id::text = g.grantee and u.active
         where g.partition = 'team=' || team_id and g.grantee_kind = 'user'),
    opened as (
        select g.grantee_kind, g.grantee, g."right", g.rank from app.grants g
         where g.partition = 'team=' || team_id and g.grantee_kind in ('agency', 'everyone')),
    listed as (
        select t.agency from team t
        union select m.agency from members m where m.agency is not null
        union select o.grantee from opened o where o.grantee_kind = 'agency'),
    body as (
        select jsonb_build_object(
            'team', t.id::text, 'partition', 'team=' || t.id, 'name', t.name, 'description', t.description,
            'agency', t.agency, 'archived', t.archived,
            'members', coalesce((select jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                                        'userId', m.id::text, 'displayName', nullif(m.display_name, ''),
                                        'agency', m.agency, 'right', m."right"))
                                        order by m.rank desc, m.display_name, m.id) from members m), '[]'),
            'openTo', coalesce((select jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                                        'kind', o.grantee_kind, 'agency', nullif(o.grantee, ''), 'right', o."right"))
                                        order by o.grantee_kind, o.grantee) from opened o), '[]')) as doc,
               t.agency as owner
          from team t)
    select id, 'agency=' || l.agency, b.doc || jsonb_build_object('_id', id)
      from listed l, body b,
           lateral (select case when l.agency = b.owner then team_id::text else team_id::text || '@' || l.agency end as id) i
$$;

-- Brings one team's listings to what they should be: new or changed ones are written (and
-- numbered by their partition's clock, so they sync and raise events like every change),
-- ones no longer wanted become tombstones, unchanged ones are left alone (no tick).
create or replace function app.team_directory_refresh(team_id uuid) returns void
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    wanted record;
    kept text[] := '{}';
begin
    for wanted in select * from app.team_directory_of(team_id) loop
        kept := kept || wanted.doc_id;
        if not exists (select 1 from sync.team_directory d where d.id = wanted.doc_id and d.doc = wanted.doc) then
            insert into sync.team_directory as d (id, partition, doc, seq)
                values (wanted.doc_id, wanted.partition, wanted.doc, app.tick(wanted.partition))
                on conflict (id) do update set doc = excluded.doc, deleted = false, seq = excluded.seq,
                    version = d.version + 1, updated_at = now();
        end if;
    end loop;
    update sync.team_directory d set doc = null, deleted = true, seq = app.tick(d.partition),
                                     version = d.version + 1, updated_at = now()
     where (d.id = team_id::text or d.id like team_id::text || '@%') and not d.deleted and d.id <> all(kept);
end
$$;

create or replace function app.teams_after_change() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    perform app.team_directory_refresh(new.id);
    return null;
end
$$;
create or replace trigger teams_directory after insert or update on app.teams
    for each row execute function app.teams_after_change();

-- Grants change one at a time from the API, by the thousand from scripts: once per
-- statement, once per team it touched. Transition tables are per event: deletes see the
-- old rows, inserts and updates the new (PL/pgSQL plans only the branch that runs).
create or replace function app.grants_after_change() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    team_id uuid;
begin
    if tg_op = 'DELETE' then
        for team_id in select distinct substr(partition, 6)::uuid from changed_old loop
            perform app.team_directory_refresh(team_id);
        end loop;
    else
        for team_id in select distinct substr(partition, 6)::uuid from changed_new loop
            perform app.team_directory_refresh(team_id);
        end loop;
    end if;
    return null;
end
$$;
drop function if exists app.grants_after_insert() cascade;
drop function if exists app.grants_after_delete() cascade;
create or replace trigger grants_directory_insert after insert on app.grants
    referencing new table as changed_new for each statement execute function app.grants_after_change();
create or replace trigger grants_directory_update after update on app.grants
    referencing new table as changed_new for each statement execute function app.grants_after_change();
create or replace trigger grants_directory_delete after delete on app.grants
    referencing old table as changed_old for each statement execute function app.grants_after_change();

-- A member renamed, moved to another agency, deactivated or reactivated: their teams' listings.
create or replace function app.users_after_team_profile_change() returns trigger
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    team_id uuid;
begin
    for team_id in select substr(g.partition, 6)::uuid from app.grants g
                    where g.grantee_kind = 'user' and g.grantee = new.id::text loop
        perform app.team_directory_refresh(team_id);
    end loop;
    return null;
end
$$;
create or replace trigger users_team_directory after update of display_name, agency, active on app.users
    for each row when (old.display_name is distinct from new.display_name or old.agency is distinct from new.agency
                       or old.active is distinct from new.active)
    execute function app.users_after_team_profile_change();

-- Teams made before the directory existed (and any listing out of step): brought to what
-- they should be. Changes nothing, and ticks no clock, when all are right.
select app.team_directory_refresh(id) from app.teams;
