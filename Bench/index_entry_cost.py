"""What an index entry costs an INSERT, with nothing else changing (docs/performance/
round-21.md, "What each entry costs"): as the superuser, in a transaction rolled back
after each leg, ROWS rows are inserted in one statement into app.push_log or
app.report_history much as pushes write them (a new key per row, `at` rising, the history's
partition one of the four demo agencies'), once with the indexes as they were before 0115
and once with a case's change to them (made in the same transaction); the statement's time
comes from EXPLAIN (ANALYZE) (no network, no client). Legs alternate (before, changed,
changed, before...); prints each leg and the median difference per row, in µs.

    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/index_entry_cost.py ROWS ROUNDS"""
import os
import statistics
import sys
import time

import psycopg2

PUSH_LOG = """insert into app.push_log (user_id, client_id, change_id, result)
           select gen_random_uuid(), 'cost', 'cost-' || n,
                  jsonb_build_object('changeId', 'cost-' || n, 'status', 'applied', 'seq', n)
             from generate_series(1, %(rows)s) n"""
HISTORY = """insert into app.report_history (report_id, partition, seq, version, device, at, op, prev_hash, hash)
           select 'cost-' || gen_random_uuid(), 'agency=' || (array['Gabon', 'WildAid', 'Ecuadorian Galapagos',
                  'Parque Nacional Galapagos'])[1 + n %% 4], n, 1, 'cost', clock_timestamp(), 'insert', '',
                  md5(n::text) || md5(n::text)
             from generate_series(1, %(rows)s) n"""
# Each case: the change to the indexes as they are on main, and the INSERT it is timed with.
CASES = {
    "push_log_at": (
        "drop index app.push_log_at",
        PUSH_LOG),
    "push_log_at -> push_log_rejected_at": (
        "drop index app.push_log_at; create index push_log_rejected_at on app.push_log (at desc)"
        " where result ->> 'status' = 'rejected'",
        PUSH_LOG),
    "report_history_partition": (
        "drop index app.report_history_partition",
        HISTORY),
    # Not kept (the round file says why): the key of the entries' own id.
    "report_history_pkey": (
        "alter table app.report_history drop constraint report_history_pkey",
        HISTORY),
}


def leg(cur, change, insert, rows):
    cur.execute("begin")
    if change:
        cur.execute(change)
    cur.execute("explain (analyze, costs off, timing off, format json) " + insert, {"rows": rows})
    ms = cur.fetchone()[0][0]["Execution Time"]
    cur.execute("rollback")
    return ms


def main():
    rows, rounds = int(sys.argv[1]), int(sys.argv[2])
    conn = psycopg2.connect(os.environ["BENCH_ADMIN_DATABASE"])
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("select count(*) from pg_indexes where indexname in ('push_log_at', 'report_history_partition')"
                " or indexname = 'push_log_rejected_at'")
    if cur.fetchone()[0] != 2:
        sys.exit("the indexes must be as before 0115 (push_log_at, report_history_partition): run its reverse")
    for name, (change, insert) in CASES.items():
        diffs = []
        for r in range(rounds):
            order = [True, False] if r % 2 == 0 else [False, True]
            took = {kept: leg(cur, None if kept else change, insert, rows) for kept in order}
            diffs.append(1000 * (took[True] - took[False]) / rows)
            load = open("/proc/loadavg").read().split()[0]
            print(f"{time.strftime('%H:%M:%S')} {name} round {r + 1}: with {took[True]:.1f} ms, "
                  f"changed {took[False]:.1f} ms, {diffs[-1]:+.2f} µs a row (load {load})", flush=True)
        print(f"{name}: median {statistics.median(diffs):+.2f} µs a row (range {min(diffs):+.2f} to "
              f"{max(diffs):+.2f}; {rounds} pairs, {rows} rows each)\n",
              flush=True)


if __name__ == "__main__":
    main()
