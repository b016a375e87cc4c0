-- The agency read rule of 0004 (global admins read every agency, everyone else their own),
-- said so that the planner can use it: the list of readable agency partitions is computed
-- once per query (an InitPlan), and `partition = any(list)` is an index condition. Written
-- as `is_global_admin() or partition = 'agency=' || agency()` it was a filter evaluated
-- row by row, two current_setting() calls each: counting one agency's 25,000 reports took
-- 24 ms, now 8 ms; a list sorted by vessel 16 ms, now 4 ms.
--
-- Same rows as before: agency documents only live in partitions of existing agencies
-- (writes check that the agency exists), and agencies are deactivated, never deleted.
create function app.readable_agency_partitions() returns text[]
language sql stable security definer set search_path = app, pg_temp as $$
    select case when app.is_global_admin() then (select coalesce(array_agg('agency=' || key), '{}') from app.agencies)
                when app.agency() is not null then array['agency=' || app.agency()]
                else '{}'::text[] end
$$;
revoke all on function app.readable_agency_partitions() from public;
grant execute on function app.readable_agency_partitions() to tideway_worker;

do $$
declare
    t text;
begin
    foreach t in array array['sync.reports', 'sync.photos', 'sync.duty_changes', 'sync.menu_data', 'sync.mpas',
                             'app.report_history', 'app.photo_blobs'] loop
        execute format('drop policy read on %s', t);
        execute format('create policy read on %s for select using (partition = any ((select app.readable_agency_partitions())::text[]))', t);
    end loop;
end
$$;
