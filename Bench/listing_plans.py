"""Which of sync.reports' indexes the back office's reads use, and what each read costs
without them (docs/performance/round-11.md, "Which of sync.reports' indexes earn their cost").

The boardings list's page and count (Sources/Boardings/BoardingFilter.swift pageQuery and
conditions, BoardingListPage.show) for every sort, its first page and a deep keyset page
(the position of the caller's middle row), as a global admin (every agency) and as an
agency's user (one partition); the dashboards' map points and bounds (Sources/Dashboards:
MapLayer, DashboardScope.located) over one agency's year. Each read is EXPLAIN (ANALYZE,
BUFFERS)ed as `tideway_worker` under the caller's claims (row-level security as the worker
sees it), in one transaction per variant that first drops the variant's indexes and is
rolled back after: nothing changes. Prints, per read and variant, the indexes the plan
used, its median execution time over REPEAT runs and its buffers.

    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/listing_plans.py [REPEAT] [VARIANT ...]

VARIANT: `-` (every index), index names joined by `+`, dropped for that variant, or
`merged` (reports_partition_date and reports_dashboard replaced by 0107's one index;
default: `-` and each of the seven sort indexes alone)."""
import os
import statistics
import sys

import psycopg2

ADMIN = os.environ["BENCH_ADMIN_DATABASE"]

# BoardingFilter.SortKey: column, keyText, cast, default direction descending?
SORTS = {
    "date": ("boarded_at", """to_char(boarded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')""", "timestamptz", True),
    "vessel": ("vessel_key", "vessel_key::text", "text", False),
    "permit": ("permit_key", "permit_key::text", "text", False),
    "captain": ("captain_key", "captain_key::text", "text", False),
    "violations": ("violation_count", "violation_count::text", "integer", True),
    "officer": ("officer_key", "officer_key::text", "text", False),
    "safety": ("safety_rank", "safety_rank::text", "smallint", True),
}
# `merged`: Migrations/0107's one index in place of reports_partition_date and reports_dashboard.
MERGED = ["drop index sync.reports_partition_date", "drop index sync.reports_dashboard",
          "create index reports_by_partition_date on sync.reports (partition, boarded_at, id)"
          " include (deleted, is_boarding, officer_email, safety_level, lon, lat) where not deleted or is_boarding"]
SORT_INDEXES = ["reports_by_date", "reports_by_vessel", "reports_by_permit", "reports_by_captain",
                "reports_by_officer", "reports_by_safety", "reports_by_violations"]

# BoardingListPage.rowColumns
ROW_COLUMNS = """r.id, r.partition, to_char(r.boarded_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as boarded,
    r.doc #>> '{vessel,name}' as vessel, r.doc #>> '{vessel,permitNumber}' as permit,
    r.doc #>> '{vessel,nationality}' as nationality, r.doc #>> '{captain,name}' as captain,
    concat_ws(' ', r.doc #>> '{reportingOfficer,name,first}', r.doc #>> '{reportingOfficer,name,last}') as officer_name,
    r.officer_key, r.safety_rank, r.violation_count, r.is_draft"""


def conditions(own):
    """BoardingFilter.conditions without filters: `not r.deleted`, and the caller's partition
    for anyone but a global admin."""
    return ("not r.deleted and r.partition = %s", [own]) if own else ("not r.deleted", [])


def page_query(sort, own, position, size=25, split=True):
    """BoardingFilter.pageQuery in the sort's default direction, after= `position`: the key's
    remaining ties, then the keys beyond only if the ties do not fill the page (`split`, as
    the worker sends it since this round), or one condition `key <= k and (key < k or
    id < i)` (as before)."""
    column, key_text, cast, descending = SORTS[sort]
    where, values = conditions(own)
    direction = "desc" if descending else "asc"
    order = f"order by r.{column} {direction}, r.id {direction}"
    op = "<" if descending else ">"
    if not position:
        ids = f"select r.id from sync.reports r where {where} {order} limit {size + 1}"
    elif split:
        matching = f"select r.id, r.{column} as key from sync.reports r where {where}"
        ids = (f"with ties as materialized ({matching} and r.{column} = %s::{cast} and r.id {op} %s {order} limit {size + 1})"
               f" select id from (select id, key from ties union all ({matching} and r.{column} {op} %s::{cast}"
               f" and (select count(*) from ties) < {size + 1} {order} limit {size + 1})) u"
               f" order by u.key {direction}, u.id {direction} limit {size + 1}")
        values = values + [position[0], position[1]] + values + [position[0]]
    else:
        ids = (f"select r.id from sync.reports r where {where} and r.{column} {op}= %s::{cast}"
               f" and (r.{column} {op} %s::{cast} or r.id {op} %s) {order} limit {size + 1}")
        values = values + [position[0], position[0], position[1]]
    sql = f"select {ROW_COLUMNS}, {key_text} as sort_key from ({ids}) page join sync.reports r on r.id = page.id {order}"
    return sql, values


def count_query(own):
    where, values = conditions(own)
    return "select count(*) as n from sync.reports r where " + where, values


def middle_position(cur, sort, own):
    """The (key text, id) of the caller's middle row in the sort's order: a deep keyset page."""
    column, key_text, _, descending = SORTS[sort]
    where, values = conditions(own)
    direction = "desc" if descending else "asc"
    cur.execute(f"select count(*) from sync.reports r where {where}", values)
    n = cur.fetchone()[0]
    cur.execute(f"select {key_text}, r.id from sync.reports r where {where} order by r.{column} {direction}, r.id {direction}"
                f" offset %s limit 1", values + [n // 2])
    return cur.fetchone()


def dashboard_queries(partition, start, end):
    """MapLayer.pointsQuery and boundsQuery on DashboardScope.located (no officer)."""
    located = ("r.partition = %s and r.is_boarding and r.boarded_at >= %s::timestamptz and r.boarded_at < %s::timestamptz"
               " and r.lon between -180 and 180 and r.lat between -90 and 90")
    values = [partition, start, end]
    return [
        ("map points, agency year", f"select r.id, r.lon, r.lat, r.safety_level from sync.reports r where {located}"
                                    " order by r.boarded_at desc, r.id limit 501", values),
        ("map bounds, agency year", "select count(*) as located, min(r.lon) as w, max(r.lon) as e, min(r.lat) as s,"
                                    f" max(r.lat) as north from sync.reports r where {located}", values),
    ]


def indexes_in(plan):
    found = []

    def walk(node):
        if "Index Name" in node and node["Index Name"] not in found:
            found.append(node["Index Name"])
        for child in node.get("Plans", []):
            walk(child)
    walk(plan)
    return found


def as_caller(cur, user):
    cur.execute("set local role tideway_worker")
    cur.execute("select set_config('tideway.user_id', %s, true), set_config('tideway.role', %s, true),"
                " set_config('tideway.agency', %s, true)", [str(user[0]), user[1], user[2] or ""])


def main():
    args = sys.argv[1:]
    repeat = int(args.pop(0)) if args and args[0].isdigit() else 5
    variants = args or ["-"] + SORT_INDEXES
    conn = psycopg2.connect(ADMIN)
    cur = conn.cursor()
    cur.execute("select id, role, agency from app.users where role = 'globalAdmin' and active order by email limit 1")
    admin = cur.fetchone()
    cur.execute("select id, role, agency from app.users where role = 'agencyAdmin' and active order by email limit 1")
    agency_admin = cur.fetchone()
    cur.execute("select count(*) from sync.reports where not deleted")
    total = cur.fetchone()[0]
    cur.execute("select max(boarded_at) from sync.reports where partition = %s", ["agency=" + agency_admin[2]])
    newest = cur.fetchone()[0]
    conn.rollback()
    callers = [("global admin", admin, None), ("agency admin", agency_admin, "agency=" + agency_admin[2])]

    # The reads, built once (deep positions read with every index in place).
    reads = []
    for who, user, own in callers:
        cur.execute("begin")
        as_caller(cur, user)
        for sort in SORTS:
            reads.append((who, user, f"sort {sort}, first page", *page_query(sort, own, None)))
            middle = middle_position(cur, sort, own)
            reads.append((who, user, f"sort {sort}, deep page", *page_query(sort, own, middle)))
            reads.append((who, user, f"sort {sort}, deep, one range", *page_query(sort, own, middle, split=False)))
        reads.append((who, user, "count", *count_query(own)))
        where, values = conditions(own)
        search = where + " and r.search @@ to_tsquery('simple', app.fold(%s))"  # BoardingFilter.tsquery of `tuna`
        reads.append((who, user, "text search, count", "select count(*) as n from sync.reports r where " + search,
                      values + ["'tuna':*"]))
        conn.rollback()
    end = newest.isoformat()
    start = newest.replace(year=newest.year - 1).isoformat()
    for name, sql, values in dashboard_queries("agency=" + agency_admin[2], start, end):
        reads.append((callers[1][0], agency_admin, name, sql, values))

    print(f"{total:,} reports; the agency admin's agency: {agency_admin[2]}; median of {repeat} EXPLAIN ANALYZE runs each; variants drop the named indexes in a rolled-back transaction")
    print(f"{'caller':<26}{'read':<30}{'variant':<24}{'ms':>9}{'buffers':>9}  indexes used")
    for variant in variants:
        for who, user, name, sql, values in reads:
            cur.execute("begin")
            if variant == "merged":
                for statement in MERGED:
                    cur.execute(statement)
            elif variant != "-":
                for index in variant.split("+"):
                    cur.execute(f"drop index sync.{index}")
            as_caller(cur, user)
            times, plan = [], None
            for _ in range(repeat):
                cur.execute("explain (analyze, buffers, format json) " + sql, values)
                out = cur.fetchone()[0][0]
                times.append(out["Execution Time"])
                plan = out["Plan"]
            conn.rollback()
            buffers = plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)
            ms = statistics.median(times)
            print(f"{who:<26}{name:<30}{variant[:23]:<24}{ms:>9.2f}{buffers:>9}  {', '.join(indexes_in(plan)) or 'none'}",
                  flush=True)


if __name__ == "__main__":
    main()
