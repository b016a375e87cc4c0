"""No statement of a Tideway session is compiled by JIT (Migrations/0114_sessions_without_jit.sql,
docs/performance/round-16.md, "No JIT in Tideway's sessions"): the role every Tideway
process logs in as carries `jit = off`, so a statement that stale statistics price far above
`jit_above_cost` runs without LLVM compiling its expressions (the job runner's fold once spent
~250 ms a turn so, for a statement of under 1 ms).

The stack's own sessions are found as test_listeners.py finds them: each backend's client
process through its socket (`ss`)."""
import json

import psycopg2

from conftest import WORKER_DB, admin_db
from test_listeners import backends, client_of, pidfile, workers

ROWS = 200_000  # enough that the self-join below is priced past jit_optimize_above_cost


def test_every_tideway_process_logs_in_as_the_role_without_jit():
    named = {pidfile("events.pid"): "events", pidfile("jobs.pid"): "jobs",
             **{w: f"worker {i + 1}" for i, w in enumerate(workers())}}
    ours = {backend: named[client] for backend, client in client_of(set(backends())).items() if client in named}
    assert set(ours.values()) == set(named.values()), f"backends found per process: {ours}"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select pid::text, usename from pg_stat_activity where pid = any(%s::int[])", (list(ours),))
        roles = {ours[pid]: role for pid, role in cur.fetchall()}
        cur.execute("select unnest(setconfig) from pg_db_role_setting"
                    " where setrole = 'tideway_worker'::regrole and setdatabase in (0, (select oid from pg_database"
                    " where datname = current_database()))")
        settings = [row[0] for row in cur.fetchall()]
    assert set(roles.values()) == {"tideway_worker"}, roles
    assert "jit=off" in settings, settings
    with psycopg2.connect(WORKER_DB) as conn, conn.cursor() as cur:
        cur.execute("show jit")
        assert cur.fetchone()[0] == "off"


def test_a_statement_priced_from_stale_statistics_is_not_compiled():
    """A mass insert that nothing has analyzed yet (a temporary table: autovacuum never does):
    the planner takes a self-join of 200,000 rows for tens of millions and prices it past
    every JIT threshold. Planned in a session of the workers' role, it gets no JIT."""
    conn = psycopg2.connect(WORKER_DB)
    try:
        with conn.cursor() as cur:
            cur.execute("create temporary table unanalyzed (i integer, t text)")
            cur.execute("insert into unanalyzed select i, md5(i::text) from generate_series(1, %s) i", (ROWS,))
            cur.execute("select current_setting('jit_above_cost')::float, current_setting('jit_optimize_above_cost')::float")
            above, optimize_above = cur.fetchone()
            cur.execute("explain (format json) select count(*), max(a.t) from unanalyzed a join unanalyzed b using (i)"
                        " where a.t like '%%ab%%'")
            plan = cur.fetchone()[0]
            plan = plan if isinstance(plan, list) else json.loads(plan)
    finally:
        conn.rollback()
        conn.close()
    assert plan[0]["Plan"]["Total Cost"] > max(above, optimize_above), plan[0]["Plan"]["Total Cost"]
    assert "JIT" not in plan[0], plan[0]["JIT"]
