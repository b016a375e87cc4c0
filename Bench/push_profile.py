"""Profile of a single push (issue 22, docs/performance.md): N pushes of one ~2.3 KB report
over HTTPS, then where PostgreSQL spent its time per push, from pg_stat_statements (nested
statements included: this script turns pg_stat_statements.track = all on, see below) and the PL/pgSQL
functions' own counters (track_functions = pl: triggers and app.* functions), including
the job runner's fold of the pushed reports into the dashboards' summaries (waited for).

    STATE=.state/bench Deploy/dev/stack.sh up    # then
    TIDEWAY_BENCH_URL=https://localhost:PORT TIDEWAY_BENCH_CA=.state/bench/tls/ca.crt \\
    TIDEWAY_BENCH_STATE=.state/bench BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/push_profile.py [pushes] [changes per push]
Times are milliseconds per document; total (not self) time, so nested rows overlap.

The dev stack counts only top-level statements, as a production server would: this script
turns `pg_stat_statements.track = all` and `track_functions = pl` on (ALTER SYSTEM, reload)
for its run and back off after it. `--plain` leaves them off, for the CPU figures of the
configuration as deployed. It also prints PostgreSQL's CPU per process kind (backends, and
walwriter, checkpointer, autovacuum... apart)."""
import json
import os
import sys
import uuid

import psycopg2
import requests

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402
from proc_counters import processes, read_pid  # noqa: E402


def postgres_processes():
    """CPU seconds so far of each live PostgreSQL process, by what it is (its title; a
    backend also by its application_name when it has one, so the event publisher's two
    backends, `tideway events`, show apart from the workers'), and of the exited ones (the
    postmaster's cutime + cstime)."""
    root = read_pid(os.path.join(wb.STATE, "pg", "postmaster.pid"))
    with psycopg2.connect(wb.ADMIN) as conn, conn.cursor() as cur:
        cur.execute("select pid, application_name from pg_stat_activity where application_name <> ''")
        names = dict(cur.fetchall())
    table = processes()
    kinds = {"exited backends": table[root][2] / wb.TICK, "postmaster": table[root][1] / wb.TICK}
    for pid, (ppid, own, _) in table.items():
        if ppid != root:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().decode(errors="replace").strip("\0 ")
        except OSError:
            continue
        # "postgres: walwriter", "postgres: tideway_worker tideway [local] idle": backends by role.
        words = title.removeprefix("postgres: ").split()
        kind = "backend " + words[0] if len(words) > 2 else " ".join(words)
        if pid in names and kind.startswith("backend "):
            kind += f" ({names[pid]})"
        kinds[kind] = kinds.get(kind, 0) + own / wb.TICK
    return kinds


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    plain = "--plain" in sys.argv
    pushes = int(args[0]) if len(args) > 0 else 200
    batch = int(args[1]) if len(args) > 1 else 1
    tok, doc = wb.token(), wb.source_doc()
    http = requests.Session()
    http.headers.update({"Authorization": f"Bearer {tok}", "Accept-Encoding": "identity"})
    prefix = f"prof-{uuid.uuid4().hex[:8]}-"
    admin = psycopg2.connect(wb.ADMIN)
    admin.autocommit = True
    cur = admin.cursor()
    cur.execute("create extension if not exists pg_stat_statements")
    if not plain:
        cur.execute("alter system set pg_stat_statements.track = 'all'")
        cur.execute("alter system set track_functions = 'pl'")
        cur.execute("select pg_reload_conf()")
    try:
        profile(http, cur, prefix, doc, pushes, batch)
    finally:
        if not plain:
            cur.execute("alter system reset pg_stat_statements.track")
            cur.execute("alter system reset track_functions")
            cur.execute("select pg_reload_conf()")
        wb.count_and_remove(prefix)


def profile(http, cur, prefix, doc, pushes, batch):
    for i in range(20):  # warm the workers' connections and plans
        cid = f"{prefix}warm-{i}"
        http.post(wb.URL + "/api/v1/sync/push", verify=wb.CA, json={"clientId": prefix, "changes": [
            {"changeId": cid, "collection": "reports", "partition": wb.PARTITION, "id": cid, "op": "insert",
             "doc": {**doc, "_id": cid}}]}).raise_for_status()
    cur.execute("select pg_stat_statements_reset(), pg_stat_reset()")
    before, processes = wb.cpu_snapshot(), postgres_processes()
    for n in range(pushes):
        changes = []
        for k in range(batch):
            cid = f"{prefix}{n}-{k}"
            changes.append({"changeId": cid, "collection": "reports", "partition": wb.PARTITION, "id": cid,
                            "op": "insert", "doc": {**doc, "_id": cid}})
        r = http.post(wb.URL + "/api/v1/sync/push", verify=wb.CA, json={"clientId": prefix, "changes": changes})
        r.raise_for_status()
        assert all(x["status"] == "applied" for x in r.json()["results"]), r.text[:300]
    wb.wait_folded()  # the job runner's fold of these reports into the summaries counts too
    cpu = wb.cpu_delta(before, wb.cpu_snapshot())
    docs = pushes * batch
    after = postgres_processes()
    print(f"{pushes} pushes of {batch}: server CPU ms/doc " +
          ", ".join(f"{k} {1000 * v / docs:.2f}" for k, v in cpu.items()))
    print("PostgreSQL CPU ms/doc by process: " + ", ".join(
        f"{k} {1000 * (after[k] - processes.get(k, 0)) / docs:.3f}" for k in sorted(after)
        if after[k] - processes.get(k, 0) > 0))
    cur.execute("select pg_sleep(0.6)")  # function counters reach the stats after a short delay
    cur.execute("""select calls, total_exec_time, total_plan_time, plans, left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
                     from pg_stat_statements order by total_exec_time desc limit 25""")
    print(f"\n{'ms/doc':>7} {'plan':>6} {'calls/doc':>9}  statement (pg_stat_statements, total incl. nested)")
    for calls, exec_ms, plan_ms, plans, query in cur.fetchall():
        print(f"{exec_ms / docs:7.3f} {plan_ms / docs:6.3f} {calls / docs:9.2f}  {query}")
    cur.execute("""select funcname, calls, total_time, self_time from pg_stat_user_functions
                    order by self_time desc limit 20""")
    print(f"\n{'self':>7} {'total':>7} {'calls/doc':>9}  function (pg_stat_user_functions, ms/doc)")
    for name, calls, total, own in cur.fetchall():
        print(f"{own / docs:7.3f} {total / docs:7.3f} {calls / docs:9.2f}  {name}")


if __name__ == "__main__":
    main()
