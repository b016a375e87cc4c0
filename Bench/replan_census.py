"""How often autovacuum's passes make Tideway's sessions plan their statements again, and
what those plans cost (docs/performance/round-18.md, "The write path's plans made
again after autovacuum"). A VACUUM or ANALYZE of a table rewrites its row in pg_class (pages,
tuples), and that invalidates every cached plan that reads the table on every connection:
PL/pgSQL's plans of the write path's functions and the workers' prepared statements are made
again at their next call.

Run beside a bench on a stack that is up (`BENCH=22 make bench`, Bench/event_timeline.py, …);
it samples every --every s, until --seconds or Ctrl-C or the stack stops:
  - each table's autovacuum and autoanalyze counts (pg_stat_all_tables, schemas app and sync),
  - pg_stat_statements' plans and planning time of the workers' role, statement by statement.
  - the workers' role's connections (a new one plans everything it runs: no pass's doing).
Then prints each pass (time, table, vacuum or analyze), the plans made per second beside
them, and the statements planned most. Plans are counted only with
`pg_stat_statements.track = all` (the functions' statements are nested) and
`pg_stat_statements.track_planning = on`: set them with ALTER SYSTEM and reload for the run
(the stacks preload the extension with neither; track_planning costs every plan a lock).

  python3 Bench/replan_census.py [--seconds 600] [--every 0.5] [--database CONNINFO] [--out FILE]

CONNINFO defaults to BENCH_ADMIN_DATABASE (a superuser on the bench stack, Bench/common.sh).
--out FILE also writes every sample, one JSON line each (time, passes, plans by statement)."""
import argparse
import json
import os
import signal
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone

import psycopg2

PASSES = """
select schemaname || '.' || relname, autovacuum_count, autoanalyze_count
  from pg_stat_all_tables where schemaname in ('app', 'sync')"""
# Without the texts (read once at the end): the file of texts is not read at every sample.
PLANS = """
select queryid, plans, total_plan_time from pg_stat_statements(false)
 where userid = 'tideway_worker'::regrole and plans > 0"""
TEXTS = "select queryid, query from pg_stat_statements where userid = 'tideway_worker'::regrole"
# The workers' role's connections: a new one plans what it runs for the first time (the
# workers warm theirs at open: Migrations/repeatable/0105), which is no pass's doing.
BACKENDS = "select pid from pg_stat_activity where usename = 'tideway_worker'"


def hms(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S.%f")[:-4]


def one_line(query, width):
    return " ".join(query.split())[:width]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--database", default=os.environ.get("BENCH_ADMIN_DATABASE"))
    parser.add_argument("--out")
    args = parser.parse_args()
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    conn = psycopg2.connect(args.database)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("select current_setting('pg_stat_statements.track'), current_setting('pg_stat_statements.track_planning')")
    track, planning = cur.fetchone()
    print(f"pg_stat_statements: track = {track}, track_planning = {planning}"
          + ("" if (track, planning) == ("all", "on") else " (plans of the functions' statements NOT counted)"), flush=True)
    out = open(args.out, "a") if args.out else None

    def sample():
        cur.execute(PASSES)
        passes = {t: (v, a) for t, v, a in cur.fetchall()}
        cur.execute(PLANS)
        plans = {q: (n, ms) for q, n, ms in cur.fetchall()}
        cur.execute(BACKENDS)
        return passes, plans, {pid for pid, in cur.fetchall()}

    began = time.time()
    last_passes, last_plans, last_backends = sample()
    events = []            # (time, table, "vacuum" | "analyze")
    per_second = defaultdict(lambda: [0, 0.0])   # whole second -> [plans, ms]
    by_statement = defaultdict(lambda: [0, 0.0])  # queryid -> [plans, ms]
    ended = began
    while not stop and time.time() - began < args.seconds:
        time.sleep(args.every)
        try:
            passes, plans, backends = sample()
        except psycopg2.Error:
            print("the stack stopped: census ends", flush=True)
            break
        now = ended = time.time()
        seen = []
        for table, (v, a) in passes.items():
            v0, a0 = last_passes.get(table, (0, 0))
            seen += [(now, table, "vacuum")] * (v - v0) + [(now, table, "analyze")] * (a - a0)
        seen += [(now, "(the workers' role)", "connection opened")] * len(backends - last_backends)
        events += seen
        new = {}
        for q, (n, ms) in plans.items():
            n0, ms0 = last_plans.get(q, (0, 0.0))
            if n > n0:
                new[q] = (n - n0, ms - ms0)
                by_statement[q][0] += n - n0
                by_statement[q][1] += ms - ms0
                per_second[int(now)][0] += n - n0
                per_second[int(now)][1] += ms - ms0
        if out and (seen or new):
            out.write(json.dumps(dict(t=now, passes=[e[1:] for e in seen],
                                      plans={str(q): v for q, v in new.items()})) + "\n")
        last_passes, last_plans, last_backends = passes, plans, backends
    texts = {}
    try:
        cur.execute(TEXTS)
        texts = dict(cur.fetchall())
    except psycopg2.Error:
        pass

    print(f"\ncensus {hms(began)}–{hms(ended)} UTC ({ended - began:.0f} s), sampled every {args.every} s")
    counts = Counter((table, kind) for _, table, kind in events)
    print(f"autovacuum's passes (and connections opened): {sum(counts.values())}")
    for (table, kind), n in sorted(counts.items()):
        times = ", ".join(hms(t)[:8] for t, tb, k in events if (tb, k) == (table, kind))
        print(f"  {table:32} {kind:8} {n:3d}: {times}")
    total = sum(v[0] for v in by_statement.values()), sum(v[1] for v in by_statement.values())
    print(f"plans made by the workers' role: {total[0]}, {total[1]:.1f} ms of planning")
    print("seconds with a pass, a new connection or over 20 plans: plans, ms of planning, what came")
    marks = defaultdict(list)
    for t, table, kind in events:
        marks[int(t)].append(f"{kind} {table}")
    for second in sorted(set(marks) | {s for s, v in per_second.items() if v[0] > 20}):
        n, ms = per_second.get(second, (0, 0.0))
        print(f"  {hms(second)[:8]}  {n:5d} {ms:8.1f}  {'; '.join(marks.get(second, []))}")
    print("statements by planning time: plans, ms, mean ms")
    for q, (n, ms) in sorted(by_statement.items(), key=lambda kv: -kv[1][1])[:15]:
        print(f"  {n:6d} {ms:9.1f} {ms / n:7.2f}  {one_line(texts.get(q, str(q)), 110)}")
    if out:
        out.close()


if __name__ == "__main__":
    main()
