-- Partitions, clocks and the rules of the synced collections (the tables and
-- app.collections: 0004_sync_documents.sql).

-- Membership checks run as the owner: the policy of conversation_members refers to its
-- own table, and a SECURITY DEFINER function keeps that from recursing.
create or replace function app.is_member(conversation text) returns boolean
language sql stable security definer set search_path = app, pg_temp as $$
    select exists (select 1 from app.conversation_members
                    where conversation_id = conversation and user_id = app.uid() and active)
$$;
drop policy if exists conversations_read on app.conversations;
create policy conversations_read on app.conversations for select using (app.is_member(id));
drop policy if exists members_read on app.conversation_members;
create policy members_read on app.conversation_members for select using (user_id = app.uid() or app.is_member(conversation_id));

-- Team partitions (0060): a caller's right on a team, 0 none, 1 read, 2 write, 3 manage.
-- Grants to the user, to everyone signed in and to the user's agency count, the best one
-- wins; an agency's admins manage their agency's teams, global admins every team. An
-- archived team is read-only (its right is at most read), for documents; managing it
-- (grants, renaming, unarchiving) stays with its managers. Written for any user (the sync
-- inspector explains another user's rights), and for the caller below.
create or replace function app.team_right_of(who uuid, who_role text, who_agency text, p text) returns int
language plpgsql stable security definer set search_path = app, pg_temp as $$
declare
    team app.teams;
    best int;
begin
    if who is null or app.partition_kind(p) is distinct from 'team' then
        return 0;
    end if;
    select * into team from app.teams where id = substr(p, 6)::uuid;
    if not found then
        return 0;
    end if;
    if who_role = 'globalAdmin' or (who_role = 'agencyAdmin' and team.agency = who_agency) then
        return 3;
    end if;
    -- Three primary-key probes, whatever the number of the user's grants elsewhere.
    select greatest((select g.rank from app.grants g where g.partition = p and g.grantee_kind = 'user' and g.grantee = who::text),
                    (select g.rank from app.grants g where g.partition = p and g.grantee_kind = 'everyone' and g.grantee = ''),
                    (select g.rank from app.grants g where g.partition = p and g.grantee_kind = 'agency' and g.grantee = who_agency))
      into best;
    return coalesce(best, 0);
end
$$;

-- The caller's right on a team partition; with `for_documents`, what it may do with the
-- team's documents now (an archived team's are read-only).
create or replace function app.team_right(p text, for_documents boolean default false) returns int
language plpgsql stable security definer set search_path = app, pg_temp as $$
declare
    r int := app.team_right_of(app.uid(), app.role(), app.agency(), p);
begin
    if for_documents and r > 1 and exists (select 1 from app.teams where id = substr(p, 6)::uuid and archived) then
        return 1;
    end if;
    return r;
end
$$;

-- The team partitions where the caller holds at least `min_right` on documents, as a jsonb
-- object whose keys are the partitions: the read and write policies of the team
-- collections test `(select app.team_partitions(n)) ? partition`, which PostgreSQL
-- computes once per query (an InitPlan) and then looks up by binary search, so that a
-- caller with a thousand grants pays little more per row than one with one (an array would
-- be searched end to end for every row). PL/pgSQL, so that its statements are planned once
-- per connection; reading needs only the caller's grants (an index-only scan).
create or replace function app.team_partitions(min_right int) returns jsonb
language plpgsql stable security definer set search_path = app, pg_temp as $$
declare
    who uuid := app.uid();
    own_agency text := app.agency();
    is_global boolean := app.is_global_admin();
    is_admin boolean := app.role() = 'agencyAdmin';
    granted jsonb;
    by_role jsonb;
begin
    if who is null then
        return '{}'::jsonb;
    end if;
    if min_right < 2 then
        select jsonb_object_agg(g.partition, true) into granted from app.grants g
         where ((g.grantee = who::text and g.grantee_kind = 'user') or (g.grantee = '' and g.grantee_kind = 'everyone')
                or (g.grantee = coalesce(own_agency, '') and g.grantee_kind = 'agency'));
    else
        select jsonb_object_agg(g.partition, true) into granted from app.grants g
          join app.teams t on t.id = substr(g.partition, 6)::uuid and not t.archived
         where g.rank >= min_right
           and ((g.grantee = who::text and g.grantee_kind = 'user') or (g.grantee = '' and g.grantee_kind = 'everyone')
                or (g.grantee = coalesce(own_agency, '') and g.grantee_kind = 'agency'));
    end if;
    if is_global or (is_admin and own_agency is not null) then
        select jsonb_object_agg('team=' || t.id, true) into by_role from app.teams t
         where (is_global or t.agency = own_agency) and (min_right < 2 or not t.archived);
    end if;
    return coalesce(granted, '{}'::jsonb) || coalesce(by_role, '{}'::jsonb);
end
$$;
revoke all on function app.team_partitions(int) from public;
grant execute on function app.team_partitions(int) to tideway_worker;

-- The partition table of the protocol, in one place. Used by the policies below and by
-- pulls (to answer `forbidden` rather than an empty page). PL/pgSQL, not SQL: a SECURITY
-- DEFINER SQL function cannot be inlined, so PostgreSQL parsed and planned its body again
-- in every statement that called it, while PL/pgSQL keeps its plans for the connection's
-- life (nearly every request runs it).
-- The agency's existence is asked on its own: a CASE holding a sub-select is a full query
-- (its executor started at every call), while the kind and the other branches are simple
-- expressions (issue 22: an idle poll's PostgreSQL time, docs/performance/round-03.md).
create or replace function app.can_read(p text) returns boolean
language plpgsql stable security definer set search_path = app, pg_temp as $$
declare
    kind text := app.partition_kind(p);
begin
    if kind = 'agency' then
        return (app.is_global_admin() or substr(p, 8) = app.agency())
               and exists (select 1 from app.agencies where key = substr(p, 8));
    end if;
    return case kind
        when 'user' then substr(p, 6) = app.uid()::text
        when 'all-users' then app.uid() is not null
        when 'conversation' then app.is_member(substr(p, 14))
        when 'team' then app.team_right(p) >= 1
        else false
    end;
end
$$;

-- Whether the caller may write documents of `collection` in partition `p`: the write rule
-- of app.collections (0004), written out as static SQL from its rows. PL/pgSQL for the
-- reason app.can_read is: as a SECURITY DEFINER SQL function its body was parsed and planned
-- again in every statement (0.3 ms of every push, issue 22, docs/performance/round-05.md). Generic
-- plans: a plan for the call's own collection folds the CASE away, so PostgreSQL found it
-- cheaper and planned the expression again at every call (repeatable/0005 says more).
-- One RETURN per rule rather than one CASE expression: an expression with a sub-select
-- (the agency-admins rule's) is run by the executor, started and ended at every call,
-- where PL/pgSQL evaluates a plain expression directly — the agency-members rule of every
-- report push then costs a few microseconds instead of ~0.04 ms (docs/performance/round-07.md, "A
-- lone push's fixed cost, seventh round").
do $do$
declare
    rule_of text := (select string_agg(format('when %L then %L', name, write_rule), ' ' order by name) from app.collections);
begin
    execute format($f$
        create or replace function app.can_write(p text, collection text) returns boolean
        language plpgsql stable security definer set search_path = app, pg_temp
            set plan_cache_mode = force_generic_plan as $$
        declare
            rule text := case collection %s end;
        begin
            case rule
                when 'agency-members' then
                    return app.partition_kind(p) = 'agency' and substr(p, 8) = app.agency();
                when 'agency-admins' then
                    return app.partition_kind(p) = 'agency'
                        and (app.is_global_admin() or (app.role() = 'agencyAdmin' and substr(p, 8) = app.agency()))
                        and exists (select 1 from app.agencies where key = substr(p, 8));
                when 'own-user' then
                    return app.partition_kind(p) = 'user' and substr(p, 6) = app.uid()::text;
                when 'conversation-members' then
                    return app.partition_kind(p) = 'conversation' and app.is_member(substr(p, 14));
                when 'team-writers' then
                    return app.partition_kind(p) = 'team' and app.team_right(p, true) >= 2;
                else
                    return false;
            end case;
        end
        $$ $f$, rule_of);
end
$do$;

-- The payload of a change's notification on `tideway_changes` (ChangeNotice.swift parses it):
-- the partition and, when the writer names it, the collection of the change:
-- `partition/collection` ('/' is in no partition's grammar), else the partition alone; with
-- the partition's clock, `partition/collection@clock` (or `partition/@clock`). Every listener
-- takes the partition part; the event publisher reads only the named collection's changes,
-- and all of them when none is named (docs/performance/round-09.md, "The publisher's read
-- narrowed to the changed collection"). The clock goes after the last '/', so that a listener
-- of the release before (which splits at the last '/') still takes the right partition during
-- a rolling upgrade; its publisher takes `collection@clock` for a collection it does not
-- know, and reads the whole partition.
--
-- The clock named is the partition's clock when the writer sent it, a number the publisher
-- then needs not read (docs/performance/round-16.md, "A thin event without a read"):
-- the writer holds the partition's clock row locked from its first tick until its
-- transaction ends, so once the notification is delivered (at commit) every change numbered
-- up to it is committed; it is the committed clock unless the same transaction ticks the
-- partition again (its later notification then names more, or, from app.tick, no clock).
create or replace function app.change_payload(p text, collection text, clock bigint) returns text
language sql immutable as $$
    select case when clock is null then concat_ws('/', p, collection)
                else p || '/' || coalesce(collection, '') || '@' || clock end
$$;

-- Takes the partition's clock for this transaction (see the top of 0004_sync_documents.sql) and
-- announces the change once the transaction commits (NOTIFY is delivered at commit).
-- PostgreSQL sends one notification per distinct payload per transaction: app.tick is called
-- once per changed row, so its payload names no clock, and a transaction of 25 updates of a
-- partition sends one notification, not 25 (app.ticks, one statement's changes, names it).
drop function if exists app.tick(text);
create or replace function app.tick(p text, collection text default null) returns bigint
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    next_seq bigint;
begin
    insert into app.partition_clocks as c (partition, seq) values (p, 1)
        on conflict (partition) do update set seq = c.seq + 1
        returning seq into next_seq;
    perform pg_notify('tideway_changes', app.change_payload(p, collection, null));
    return next_seq;
end
$$;

-- app.tick for the new changes of one statement at once, ps[i] the partition of the i-th
-- change: one update of each partition's clock row instead of one call and one update per
-- change (a push of 25 new reports into one partition: one). The i-th change gets the
-- number n calls of app.tick in input order would give it; clock rows are taken in
-- partition order, so two such statements alone never deadlock on them.
--
-- Changes of one partition (a lone push, and most pushes) take the clock with one upsert:
-- the general statement below (a hash aggregate, a window, two joins) cost ~0.1 ms of
-- executor set-up and run per call whatever its size, a third of it the upsert
-- (docs/performance/round-07.md, "A lone push's fixed cost, seventh round"). Same numbers: the
-- i-th of k changes gets the clock's new value - k + i. `collection`: that of every change, for
-- the notification (app.tick).
drop function if exists app.ticks(text[]);
create or replace function app.ticks(ps text[], collection text default null) returns bigint[]
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    result bigint[];
    payloads text[];
    k integer := cardinality(ps);
    last bigint;
begin
    if k > 0 and ps[1] = all(ps) then
        insert into app.partition_clocks as c (partition, seq) values (ps[1], k)
            on conflict (partition) do update set seq = c.seq + excluded.seq
            returning c.seq into last;
        perform pg_notify('tideway_changes', app.change_payload(ps[1], collection, last));
        if k = 1 then
            return array[last];
        end if;
        return array(select generate_series(last - k + 1, last));
    end if;
    with wanted as (select t.p, count(*) as k from unnest(ps) as t(p) group by t.p),
         taken as (insert into app.partition_clocks as c (partition, seq)
                   select w.p, w.k from wanted w order by w.p
                   on conflict (partition) do update set seq = c.seq + excluded.seq
                   returning c.partition, c.seq)
    select (select array_agg(x.seq order by x.n)
              from (select t.n, c.seq - w.k + row_number() over (partition by t.p order by t.n) as seq
                      from unnest(ps) with ordinality as t(p, n)
                      join wanted w on w.p = t.p
                      join taken c on c.partition = t.p) x),
           (select array_agg(app.change_payload(c.partition, collection, c.seq)) from taken c)
      into result, payloads;
    perform pg_notify('tideway_changes', n) from unnest(payloads) as n;
    return result;
end
$$;

-- The clock and compaction horizon of partitions the caller may read.
create or replace function app.clocks(ps text[]) returns table (partition text, seq bigint, compacted_seq bigint)
language sql stable security definer set search_path = app, pg_temp as $$
    select c.partition, c.seq, c.compacted_seq from app.partition_clocks c
     where c.partition = any(ps) and app.can_read(c.partition)
$$;

-- The agency read rule (global admins read every agency, everyone else their own),
-- said so that the planner can use it: the list of readable agency partitions is computed
-- once per query (an InitPlan), and `partition = any(list)` is an index condition. Written
-- as `is_global_admin() or partition = 'agency=' || agency()` it was a filter evaluated
-- row by row, two current_setting() calls each: counting one agency's 25,000 reports took
-- 24 ms, now 8 ms; a list sorted by vessel 16 ms, now 4 ms.
--
-- Same rows as before: agency documents only live in partitions of existing agencies
-- (writes check that the agency exists), and agencies are deactivated, never deleted.
-- Every agency-partitioned table's read policy is this one.
--
-- PL/pgSQL, not SQL: a SECURITY DEFINER SQL function cannot be inlined, so its body was
-- parsed and planned again at every call, and every statement that reads an agency table
-- under these policies calls it once per table (a carried event's read of an agency
-- partition 7 times, a push's write once): ~8 parses and plans per pushed report, the
-- largest item of a push's PostgreSQL profile (docs/performance/round-03.md, "The push path, third
-- round"). PL/pgSQL keeps the plan for the connection's life.
create or replace function app.readable_agency_partitions() returns text[]
language plpgsql stable security definer set search_path = app, pg_temp as $$
begin
    if app.is_global_admin() then
        return (select coalesce(array_agg('agency=' || key), '{}') from app.agencies);
    elsif app.agency() is not null then
        return array['agency=' || app.agency()];
    end if;
    return '{}'::text[];
end
$$;
revoke all on function app.readable_agency_partitions() from public;
grant execute on function app.readable_agency_partitions() to tideway_worker;

-- The collections' policies, from app.collections (0004). Reading: the partition table
-- (an agency's documents through app.readable_agency_partitions, repeatable/0024, so that
-- the readable partitions are an index condition). Writing: the write rule, spelled out
-- per table so that the policy is cheap to evaluate row by row (a user's own document
-- exists from account creation on, server effect 1: update only; `server`: no write
-- policy at all, only the server's own functions write).
do $do$
declare
    c app.collections;
    reads text;
    writes text;
begin
    for c in select * from app.collections order by name loop
        reads := case c.partition_kind
            when 'agency' then 'partition = any ((select app.readable_agency_partitions())::text[])'
            when 'user' then $$partition = 'user=' || app.uid()$$
            when 'all-users' then 'app.uid() is not null'
            when 'conversation' then 'app.is_member(substr(partition, 14))'
            when 'team' then '(select app.team_partitions(1)) ? partition'
        end;
        writes := case c.write_rule
            when 'agency-members' then $$partition = 'agency=' || app.agency()$$
            when 'agency-admins' then format('app.can_write(partition, %L)', c.name)
            when 'own-user' then $$partition = 'user=' || app.uid()$$
            when 'conversation-members' then 'app.is_member(substr(partition, 14))'
            when 'team-writers' then '(select app.team_partitions(2)) ? partition'
        end;
        execute format('drop policy if exists read on sync.%I', c.table_name);
        execute format('create policy read on sync.%I for select using (%s)', c.table_name, reads);
        execute format('drop policy if exists write_insert on sync.%I', c.table_name);
        execute format('drop policy if exists write_update on sync.%I', c.table_name);
        if c.write_rule in ('agency-members', 'agency-admins', 'conversation-members', 'team-writers') then
            execute format('create policy write_insert on sync.%I for insert with check (%s)', c.table_name, writes);
        end if;
        if c.write_rule <> 'server' then
            execute format('create policy write_update on sync.%I for update using (%s) with check (%s)', c.table_name, writes, writes);
        end if;
    end loop;
end
$do$;

drop policy if exists own on app.push_log;
create policy own on app.push_log for all using (user_id = app.uid()) with check (user_id = app.uid());
drop policy if exists own on app.devices;
create policy own on app.devices for all using (user_id = app.uid() or app.is_global_admin()) with check (user_id = app.uid());
