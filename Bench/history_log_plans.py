"""Plans of the reads of app.push_log and app.report_history, with each variant of their
indexes (docs/performance/round-21.md, "The indexes a report's push writes, and their
readers"). In one transaction, rolled back at the end: the push log gets ROWS made-up
entries of the demo officers (one in 100 refused, over 90 days) beside what it holds, and is
analysed; then for each variant (a SQL file run as the superuser) each read is EXPLAIN
(ANALYZE, BUFFERS)ed as `tideway_worker` under a global admin's and an agency admin's claims
(row-level security as in the worker): the sync inspector's two statements
(Administration/SyncInspector.swift; the device list with the columns that read the push log
and its FROM, ORDER BY and LIMIT, the refused list as the worker sends it), a report's history
timeline (Boardings/BoardingHistory.swift) and the trigger's last hash (repeatable/0020). Prints the
indexes each plan used and the median of REPEAT runs' execution times.

    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/history_log_plans.py ROWS REPEAT NAME=FILE.sql NAME=FILE.sql...

Needs a stack with reports (`BENCH=22 make bench` seeds 4 agencies of 5,000)."""
import os
import statistics
import sys

import psycopg2

from listing_plans import as_caller, indexes_in

INSPECTOR_DEVICES = """
select d.user_id::text as user_id, u.email, d.client_id,
       (select count(*) from app.push_log l where l.user_id = d.user_id and l.client_id = d.client_id
           and l.result->>'status' = 'rejected' and l.at > now() - interval '7 days') as rejections
  from app.devices d join app.users u on u.id = d.user_id
 order by greatest(d.last_pull, d.last_push, d.first_seen) desc nulls last limit 200"""
INSPECTOR_REJECTIONS = """
select to_char(l.at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as at, u.email, l.client_id, l.change_id,
       l.result->'error'->>'code' as code, l.result->'error'->>'message' as message
  from (select * from app.push_log where result->>'status' = 'rejected' order by at desc limit 100) l
  join app.users u on u.id = l.user_id
 order by l.at desc"""
HISTORY = """
select h.at, h.op, h.device, h.version, h.change::text
  from app.report_history h
 where h.report_id = %(report)s
 order by h.id desc limit 200"""
LAST_HASH = "select h.hash from app.report_history h where h.report_id = %(report)s order by h.id desc limit 1"
READS = {"inspector devices": INSPECTOR_DEVICES, "inspector rejections": INSPECTOR_REJECTIONS,
         "history timeline": HISTORY, "last hash": LAST_HASH}

FILL = """
insert into app.push_log (user_id, client_id, change_id, result, at)
select u.id, 'plans-' || (n %% 3), 'plans-' || n,
       case when n %% 100 = 0
            then jsonb_build_object('changeId', 'plans-' || n, 'status', 'rejected',
                                    'error', jsonb_build_object('code', 'validation', 'message', 'made up'))
            else jsonb_build_object('changeId', 'plans-' || n, 'status', 'applied', 'seq', n) end,
       now() - (n::float8 / %(rows)s) * interval '90 days'
  from generate_series(1, %(rows)s) n
  join lateral (select id from app.users where role = 'officer' order by email offset n %% 8 limit 1) u on true"""


def main():
    rows, repeat = int(sys.argv[1]), int(sys.argv[2])
    variants = [a.split("=", 1) for a in sys.argv[3:]]
    conn = psycopg2.connect(os.environ["BENCH_ADMIN_DATABASE"])
    cur = conn.cursor()
    cur.execute(FILL, {"rows": rows})
    cur.execute("analyze app.push_log")
    cur.execute("select report_id from app.report_history order by id desc limit 1")
    report = cur.fetchone()[0]
    callers = {}
    for role in ("globalAdmin", "agencyAdmin"):
        cur.execute("select id::text, role, coalesce(agency, '') from app.users where role = %s order by email limit 1",
                    (role,))
        callers[role] = cur.fetchone()
    for name, path in variants:
        cur.execute(open(path).read())
        for role, caller in callers.items():
            cur.execute("savepoint caller")
            as_caller(cur, caller)
            for read, sql in READS.items():
                times, used = [], []
                for _ in range(repeat):
                    cur.execute("explain (analyze, buffers, format json) " + sql, {"report": report})
                    plan = cur.fetchone()[0][0]
                    times.append(plan["Execution Time"])
                    used = indexes_in(plan["Plan"])
                print(f"{name:>6} {role:>11} {read:<21} {statistics.median(times):8.3f} ms  "
                      f"{', '.join(used) or 'no index'}", flush=True)
            cur.execute("rollback to savepoint caller")
    conn.rollback()


if __name__ == "__main__":
    main()
