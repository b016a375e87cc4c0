-- Cursor age in the sync inspector (issue 7). A pull that names its device (`clientId`)
-- records where that device's cursors stand afterwards: per partition, the seq up to which
-- it has every change. The worker writes this only when the positions moved or a minute
-- passed, so idle polls rarely write (Sync/DevicePulls.swift).

-- When the oldest change a device has not pulled yet was written: the first document
-- after its position in each partition whose clock moved on (one index probe per table on
-- (partition, seq, id)); null when it has everything. Security definer, as it looks into
-- partitions the admin may not read (a user's own), but it answers only a time, and only
-- about the devices of a user the caller manages (or their own).
-- The collections' tables are probed one by one, written out from app.collections (0004).
do $do$
begin
    execute replace($f$
create or replace function app.oldest_unpulled(device_user uuid, positions jsonb) returns timestamptz
language sql stable security definer set search_path = app, pg_temp as $$
    select min(first.at)
      from (select key as name, value::bigint as seq from jsonb_each_text(coalesce(positions, '{}'::jsonb))) p
      join app.partition_clocks c on c.partition = p.name and c.seq > p.seq
     cross join lateral (
        select min(t.updated_at) as at from (
               @unions@
        ) t
     ) first
     where app.is_global_admin() or app.may_manage_user(device_user) or device_user = app.uid()
$$;
    $f$, '@unions@', (select string_agg(format('(select d.updated_at from sync.%I d where d.partition = p.name and d.seq > p.seq order by d.seq limit 1)', table_name), E'\n               union all ' order by name) from app.collections));
end
$do$;
