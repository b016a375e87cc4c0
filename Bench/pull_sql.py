"""One pull's SQL as PullRoute/PullQuery.swift send it, for pgbench (the limit a pull is
measured against: PostgreSQL alone doing the same work, with the same claims --
app.authenticate with the same token -- in the same read-only snapshot). One home for the
benches that need it (Bench/reads_bench.py, Bench/sync_bench.py)."""

# An agency partition's collections and their tables (app.collections).
AGENCY_COLLECTIONS = [("reports", "reports"), ("photos", "photos"), ("dutyChanges", "duty_changes"),
                      ("menuData", "menu_data"), ("mpas", "mpas"), ("agencyTasks", "agency_tasks")]


def changes_sql(partition, seq=0, coll="", ident="", limit=10001):
    """PullQuery.changes: the changes after the cursor, each rendered above the sort."""
    keys = " union all ".join(
        f"""select seq, '{c}' as coll, id, deleted, doc from sync.{table} where partition = '{partition}' and seq >= {seq} """
        f"""and (seq > {seq} or '{coll}' < '{c}' collate "C" or ('{coll}' = '{c}' and id > '{ident}' collate "C"))"""
        for c, table in AGENCY_COLLECTIONS)
    return (f"""select seq, coll, id, '{{"collection":"' || coll || '","id":' || to_json(id)::text || case when deleted then ',"op":"delete"}}' else ',"op":"upsert","doc":' || doc::text || '}}' end as body """
            f"""from ({keys}) changes order by seq, coll collate "C", id collate "C" limit {limit}""")


def pull_sql(token, partition, seq=0, coll="", ident="", limit=10001):
    """The whole snapshot of a pull of one partition, as a pgbench script."""
    return "\n".join([
        "begin isolation level repeatable read read only;",
        f"select * from app.authenticate(sha256(convert_to('{token}', 'UTF8')), 'access');",
        f"select p.name as partition, app.can_read(p.name) as readable, c.seq, c.compacted_seq "
        f"from unnest(array['{partition}']) as p(name) left join app.clocks(array['{partition}']) c on c.partition = p.name;",
        changes_sql(partition, seq, coll, ident, limit) + ";",
        "commit;",
    ]) + "\n"
