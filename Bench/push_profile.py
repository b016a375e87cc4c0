"""Profile of a single push (issue 22, docs/performance.md): N pushes of one ~2.3 KB report
over HTTPS, then where PostgreSQL spent its time per push, from pg_stat_statements (nested
statements included: pg_stat_statements.track = all in the dev stack) and the PL/pgSQL
functions' own counters (track_functions = pl: triggers and app.* functions), including
the job runner's fold of the pushed reports into the dashboards' summaries (waited for).

    STATE=.state/bench Deploy/dev/stack.sh up    # then
    TIDEWAY_BENCH_URL=https://localhost:PORT TIDEWAY_BENCH_CA=.state/bench/tls/ca.crt \\
    TIDEWAY_BENCH_STATE=.state/bench BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/push_profile.py [pushes] [changes per push]
Times are milliseconds per document; total (not self) time, so nested rows overlap."""
import json
import sys
import uuid

import psycopg2
import requests

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402


def main():
    pushes = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    tok, doc = wb.token(), wb.source_doc()
    http = requests.Session()
    http.headers.update({"Authorization": f"Bearer {tok}", "Accept-Encoding": "identity"})
    prefix = f"prof-{uuid.uuid4().hex[:8]}-"
    admin = psycopg2.connect(wb.ADMIN)
    admin.autocommit = True
    cur = admin.cursor()
    cur.execute("create extension if not exists pg_stat_statements")
    for i in range(20):  # warm the workers' connections and plans
        cid = f"{prefix}warm-{i}"
        http.post(wb.URL + "/api/v1/sync/push", verify=wb.CA, json={"clientId": prefix, "changes": [
            {"changeId": cid, "collection": "reports", "partition": wb.PARTITION, "id": cid, "op": "insert",
             "doc": {**doc, "_id": cid}}]}).raise_for_status()
    cur.execute("select pg_stat_statements_reset(), pg_stat_reset()")
    before = wb.cpu_snapshot()
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
    print(f"{pushes} pushes of {batch}: server CPU ms/doc " +
          ", ".join(f"{k} {1000 * v / docs:.2f}" for k, v in cpu.items()))
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
    wb.count_and_remove(prefix)


if __name__ == "__main__":
    main()
