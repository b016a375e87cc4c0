-- Most polls of idle devices find nothing new. This answers that in one cheap statement:
-- the caller's token is checked (app.authenticate: a revoked or expired token fails here
-- as everywhere), and each partition must be readable with its clock and compaction
-- horizon exactly where the caller's cursor says. True: nothing changed, and the worker
-- answers without running the pull's range scans; false: it runs the full pull.
-- PL/pgSQL, security definer: it plans its statements once per connection and reads the
-- clocks directly; each partition's readability is decided once, by app.can_read, after
-- app.authenticate has set the caller's claims. In pgbench (16 clients, the 2-core
-- benchmark machine) 1,700 -> 3,700 calls/s from PL/pgSQL, then 6,300 -> 7,800 without
-- BEGIN/COMMIT around it and with the one-query app.authenticate.
-- Each statement of a PL/pgSQL function that is a query has its executor started anew in
-- every transaction, and each poll is its own transaction: so app.authenticate is called
-- as a simple expression (it returns one row), and the partitions are walked one by one,
-- each an index lookup of its clock, stopping at the first that moved, rather than joined
-- in a query with a sub-select (issue 22, docs/performance/round-03.md "Idle polls, third round").
create or replace function app.unchanged(token_hash bytea, partitions text[], seqs bigint[], horizons bigint[]) returns boolean
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    clock app.partition_clocks;
begin
    perform app.authenticate(token_hash, 'access');
    for i in 1 .. coalesce(cardinality(partitions), 0) loop
        if not app.can_read(partitions[i]) then
            return false;
        end if;
        select * into clock from app.partition_clocks c where c.partition = partitions[i];
        -- No clock yet: the partition has had no change, its cursor stands at 0.
        if coalesce(clock.seq, 0) <> seqs[i] or coalesce(clock.compacted_seq, 0) <> horizons[i] then
            return false;
        end if;
    end loop;
    return true;
end
$$;
