"""Which statements PostgreSQL compiled with JIT, and which took longest to plan, since
pg_stat_statements was last reset (docs/performance/round-16.md, "No JIT in Tideway's
sessions"). Run it after a bench or a test run on the same stack; `--reset` empties the
counts first (e.g. right after a start). Nested statements (those PL/pgSQL functions run) are
counted only with `pg_stat_statements.track = all`, planning times only with
`pg_stat_statements.track_planning = on` (set them with ALTER SYSTEM and restart for the
run; the stacks preload the extension with neither).

  python3 Bench/jit_census.py [--reset] [--database CONNINFO]

CONNINFO defaults to BENCH_ADMIN_DATABASE (a superuser on the bench stack, Bench/common.sh)."""
import argparse
import os

import psycopg2

JIT = """
select userid::regrole::text, calls, jit_functions,
       jit_generation_time + jit_inlining_time + jit_optimization_time + jit_emission_time,
       jit_inlining_count, jit_optimization_count, total_exec_time, query
  from pg_stat_statements where jit_functions > 0 order by 4 desc"""
PLANS = """
select max_plan_time, mean_plan_time, plans, calls, query
  from pg_stat_statements where plans > 0 order by max_plan_time desc limit %s"""


def one_line(query, width):
    return " ".join(query.split())[:width]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reset", action="store_true", help="empty the counts and stop")
    parser.add_argument("--database", default=os.environ.get("BENCH_ADMIN_DATABASE"))
    parser.add_argument("--plans", type=int, default=10, help="how many statements by their slowest plan")
    args = parser.parse_args()
    conn = psycopg2.connect(args.database)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("create extension if not exists pg_stat_statements")
        if args.reset:
            cur.execute("select pg_stat_statements_reset()")
            print("pg_stat_statements reset")
            return
        cur.execute("select current_setting('pg_stat_statements.track'), current_setting('pg_stat_statements.track_planning'),"
                    " (select sum(calls) from pg_stat_statements)")
        track, planning, calls = cur.fetchone()
        print(f"pg_stat_statements: track = {track}, track_planning = {planning}, {calls or 0} calls counted")
        cur.execute(JIT)
        rows = cur.fetchall()
        print(f"statements compiled by JIT: {len(rows)}")
        for role, n, functions, jit_ms, inlined, optimized, exec_ms, query in rows:
            print(f"  {role}: {n} calls, {functions} functions, JIT {jit_ms:.1f} ms ({inlined} inlined, {optimized} optimized),"
                  f" execution {exec_ms:.1f} ms: {one_line(query, 140)}")
        if planning == "on":
            cur.execute(PLANS, (args.plans,))
            print("slowest plans (ms): max / mean, plans, calls")
            for worst, mean, plans, n, query in cur.fetchall():
                print(f"  {worst:7.1f} / {mean:5.2f}  {plans:6d} {n:8d}  {one_line(query, 110)}")
    conn.close()


if __name__ == "__main__":
    main()
