"""Drives Bench/22-writes.sh (issue 22, the write path): reports of ~2.3 KB created over
HTTPS through nginx, one per push and 25 per push, and the write-acknowledged latency on
one kept-alive connection, each against PostgreSQL alone doing the same INSERTs as the
worker role under the same claims (pgbench: app.authenticate with the same token, so the
same row-level security, generated columns, indexes and triggers, the report's facts
written by the INSERT and the partition's clock taken by one app.ticks, as a push's are;
the job runner then folds the reports into the dashboards' summaries, for both).

Server CPU per document comes from the processes' own counters (/proc/<pid>/stat utime +
stime, before and after): the FastCGI workers, every PostgreSQL process (the postmaster's
cutime/cstime keep what exited backends used), nginx, the event publisher (`tideway events`)
and the job runner, which folds the
reports into the dashboards' summaries off the write path (Migrations/0087): a run's
"after" is taken once the runner has folded every report of the run, for Tideway and the
limit alike, so both include that effect. Medians of RUNS runs, Tideway and the limit
alternated so that both see the same machine. Never fails on numbers."""
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid

import psycopg2
import requests

from proc_counters import TICK, processes, read_pid, stat

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
ADMIN = os.environ["BENCH_ADMIN_DATABASE"]
STATE = os.environ["TIDEWAY_BENCH_STATE"]
RUN_DIR = os.path.join(STATE, "run")
AGENCY, OFFICER, PASSWORD = "Gabon", "gabon.officer1@demo.tideway", "tideway-demo"
PARTITION = f"agency={AGENCY}"
SECONDS = int(os.environ.get("BENCH22_SECONDS", "4"))
RUNS = int(os.environ.get("BENCH22_RUNS", "3"))
CLIENTS = 4  # concurrent connections for the rates


# Server CPU from the processes' own counters

def cpu_snapshot():
    """Seconds of CPU used so far by the workers, PostgreSQL, nginx, the job runner and the event publisher of the bench stack."""
    table = processes()
    children = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)

    def tree(root, with_exited):
        if root is None or root not in table:
            return 0
        own = table[root][1] + (table[root][2] if with_exited else 0)
        return own + sum(table[c][1] for c in children.get(root, []))

    workers = sum(tree(read_pid(os.path.join(RUN_DIR, f)), False)
                  for f in os.listdir(RUN_DIR) if re.fullmatch(r"worker-\d+\.pid", f))
    postgres = tree(read_pid(os.path.join(STATE, "pg", "postmaster.pid")), True)
    nginx = sum(tree(read_pid(os.path.join(RUN_DIR, f)), False)  # every instance's (NGINX_INSTANCES)
                for f in os.listdir(RUN_DIR) if re.fullmatch(r"nginx(-\d+)?\.pid", f))
    jobs = tree(read_pid(os.path.join(RUN_DIR, "jobs.pid")), False)
    # The change-event publisher reads and publishes every write (its PostgreSQL backend is
    # in `postgres` already); the limit's inserts notify it too, so it counts on both sides.
    events = tree(read_pid(os.path.join(RUN_DIR, "events.pid")), False)
    return {"worker": workers / TICK, "postgres": postgres / TICK, "nginx": nginx / TICK, "jobs": jobs / TICK,
            "events": events / TICK}


def wait_folded(limit=60):
    """Waits until the job runner has folded every change of the partition into the
    dashboards' summaries (its watermark reached the partition's clock), so that a run's
    CPU includes that work and the next run starts with none pending."""
    deadline = time.monotonic() + limit
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        conn.autocommit = True
        cur.execute("select to_regprocedure('app.fold_boarding_summaries()') is null")
        if cur.fetchone()[0]:
            return  # a database that keeps the summaries in the writing transaction (before 0087)
        while time.monotonic() < deadline:
            cur.execute("select (select seq from app.partition_clocks where partition = %(p)s) "
                        "<= coalesce((select seq from app.summary_watermarks where partition = %(p)s), 0) "
                        "and not exists (select from app.boarding_removals where partition = %(p)s)", {"p": PARTITION})
            if cur.fetchone()[0]:
                return
            time.sleep(0.02)
    print(f"WARNING: the job runner did not fold {PARTITION} within {limit} s (is `tideway jobs` running?)")


def cpu_delta(before, after):
    return {k: after[k] - before[k] for k in before}


# Data

def worker_backend():
    """A connection as the worker role, and a function answering its backend's CPU seconds so
    far (its own /proc counters)."""
    conn = psycopg2.connect(f"host={RUN_DIR} dbname={os.environ.get('BENCH_DBNAME', 'tideway')} user=tideway_worker")
    with conn.cursor() as cur:
        cur.execute("select pg_backend_pid()")
        pid = cur.fetchone()[0]

    def cpu():
        return stat(pid)[1] / TICK
    return conn, pid, cpu


def run_ns(pid):
    """A process's time on a CPU so far, in nanoseconds (/proc/<pid>/schedstat): fine enough
    for one statement's CPU, where /proc/<pid>/stat counts 10 ms ticks."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def source_doc():
    """A generated report of another agency (~2.3 KB), pushed again under new ids."""
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute("select doc from sync.reports where partition = 'agency=WildAid' and not deleted "
                    "and length(doc::text) between 2100 and 2600 order by id limit 1")
        doc = cur.fetchone()[0]
    doc.pop("_id", None)
    return doc


def count_and_remove(prefix, dbname=None):
    with psycopg2.connect(ADMIN if dbname is None else f"{ADMIN} dbname={dbname}") as conn, conn.cursor() as cur:
        cur.execute("select count(*) from sync.reports where id like %s", (prefix + "%",))
        n = cur.fetchone()[0]
        cur.execute("delete from sync.reports where id like %s", (prefix + "%",))
        cur.execute("delete from app.push_log where change_id like %s", (prefix + "%",))
    return n


# What a run's writes leave for autovacuum, by the writes themselves and their fold (the push
# log, the history, the device's row, the clock, the summaries and their bookkeeping).
WRITTEN_TABLES = ("sync.reports", "app.push_log", "app.report_history", "app.devices", "app.partition_clocks",
                  "app.summary_watermarks", "app.boarding_contributions", "app.boarding_removals",
                  "app.boarding_days", "app.officer_days", "app.tally_days")


def vacuum(dbname=None):
    """Vacuums and analyzes what a run wrote and its clean-up left dead, outside the measured
    windows, for Tideway and the limit alike: each run then inserts into tables and indexes
    without the runs before it as dead entries, whenever autovacuum would have come.
    (Twelfth round: after the rows before it, ~74,000 dead reports, the acknowledged row's
    PostgreSQL CPU per push was 2.5–2.9 ms, against 1.2–2.0 with ~7,600.)
    Analyzed too, so that autovacuum finds nothing the runs before left: its worker (an
    ANALYZE of the 1.6 GB history or of the reports, ~0.9–1.5 s of CPU) otherwise landed in
    whichever run was measured when its minute came, and the acknowledged row's runs, with
    the fewest documents to divide it by, took it hardest; and while a batch row's clean-up
    lay unvacuumed the fold was JIT-compiled at every turn, ~0.4 s a second before 0051 turned
    JIT off for it (docs/performance/round-15.md, "The acknowledged row's gap")."""
    conn = psycopg2.connect(ADMIN if dbname is None else f"{ADMIN} dbname={dbname}")
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("vacuum (analyze) " + ", ".join(WRITTEN_TABLES))
    finally:
        conn.close()


def token():
    if os.environ.get("BENCH_TOKEN"):  # a copy of the database (BENCH_DBNAME) holding this login's token
        return os.environ["BENCH_TOKEN"]
    r = requests.post(URL + "/api/v1/auth/login", json={"email": OFFICER, "password": PASSWORD}, verify=CA)
    r.raise_for_status()
    return r.json()["accessToken"]


# Tideway: wrk, one connection per thread, a fresh id per change

def lua_long(text):
    assert "]==]" not in text
    return "[==[" + text + "]==]"


def wrk_script(tok, doc, batch, prefix):
    change = json.dumps({"changeId": "@ID@", "collection": "reports", "partition": PARTITION, "id": "@ID@",
                         "op": "insert", "doc": {"_id": "@ID@", **doc}}, separators=(",", ":"))
    parts = change.split("@ID@")
    return f"""
local parts = {{{", ".join(lua_long(p) for p in parts)}}}
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", tostring(threads))
end
local counter = 0
request = function()
  counter = counter + 1
  local changes = {{}}
  for k = 1, {batch} do
    local id = "{prefix}" .. tid .. "-" .. counter .. "-" .. k
    changes[k] = table.concat(parts, id)
  end
  local body = '{{"clientId":"{prefix}' .. tid .. '","changes":[' .. table.concat(changes, ",") .. ']}}'
  return wrk.format("POST", "/api/v1/sync/push", {{["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer {tok}", ["Accept-Encoding"] = "identity"}}, body)
end
"""


def wrk(script, connections):
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(["wrk", f"-t{connections}", f"-c{connections}", f"-d{SECONDS}s", "--latency", "-s", f.name,
                              URL + "/api/v1/sync/push"], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    m = re.search(r"(\d+) requests in ([0-9.]+)(ms|s|m)", out)
    elapsed = float(m.group(2)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(3)]
    p50 = re.search(r"50%\s+([0-9.]+)(us|ms|s)", out)
    p50_ms = float(p50.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p50.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return elapsed, p50_ms, int(bad.group(1)) if bad else 0


def tideway_run(tok, doc, batch, connections):
    prefix = f"b22-{uuid.uuid4().hex[:8]}-"
    before = cpu_snapshot()
    elapsed, p50, bad = wrk(wrk_script(tok, doc, batch, prefix), connections)
    wait_folded()
    cpu = cpu_delta(before, cpu_snapshot())
    docs = count_and_remove(prefix)  # only what is durable counts
    wait_folded()
    vacuum()
    return {"docs": docs, "rate": docs / elapsed, "cpu": cpu, "p50": p50, "bad": bad}


# The limit: the same INSERTs as the worker role, same claims, in PostgreSQL alone (pgbench)

def facts_columns():
    """The report's facts, as app.report_row_facts names them (Migrations/0108). A push's
    INSERT writes them itself, computed for the whole statement, and the report's BEFORE
    trigger then does not fire; the limit's INSERT writes them the same way, so that it does
    the same work by the best plain SQL, not the trigger's per-row query on top. (`offset 0`
    keeps each document one value: pulled up into the inlined facts, its `jsonb_set` ran at
    each of their ~30 uses, as app.insert_documents avoids by its `rows from`.)"""
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute("select string_agg(attname, ', ' order by attnum) from pg_attribute "
                    "where attrelid = 'app.report_row_facts'::regclass and attnum > 0 and not attisdropped")
        return cur.fetchone()[0]


def pg_script(tok, doc, batch, prefix):
    """The limit's transaction: the push's INSERT of `batch` reports as PostgreSQL alone runs
    it. Its clock is taken as a push's is (app.insert_documents): one app.ticks call for the
    statement, whose notification names the reports and the partition's clock, so the event
    publisher reads nothing for it, as for a push (docs/performance/round-16.md, "A thin event
    without a read"). Until the seventeenth round it took app.tick per row, whose notification
    names no clock, and the limit paid a publisher's read that a push no longer does
    (docs/performance/round-17.md, "The limit's clock taken as the push takes it")."""
    literal = json.dumps(doc).replace("'", "''")
    facts = facts_columns()
    return (
        "begin;\n"
        f"select count(*) from app.authenticate(sha256(convert_to('{tok}', 'UTF8')), 'access');\n"
        f"insert into sync.reports (id, partition, doc, seq, updated_by, {facts}) "
        f"select x.id, '{PARTITION}', x.doc, x.seq, app.uid(), f.{facts.replace(', ', ', f.')} "
        f"from (select y.id, y.seq, jsonb_set('{literal}'::jsonb, '{{_id}}', to_jsonb(y.id)) as doc "
        f"from (select '{prefix}' || gen_random_uuid() as id, t.seq "
        f"from unnest(app.ticks(array_fill('{PARTITION}'::text, array[{batch}]), 'reports')) t(seq)) y offset 0) x "
        "cross join lateral app.report_row_facts(x.doc, false) f;\n"
        "commit;\n")


def pgbench(script, connections):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.sql")
        with open(path, "w") as f:
            f.write(script)
        # Prepared, as the worker's statements are: the INSERT with the facts inlined is dear
        # to plan (lone reports on 4 connections, 00:30 on 2026-11-27: ~5 ms of server CPU a
        # report planned anew, ~3 prepared). The rounds before planned each INSERT anew, which
        # cost little without the facts.
        subprocess.run(["pgbench", "-n", "-M", "prepared", "-h", RUN_DIR, "-U", "tideway_worker", f"-c{connections}", f"-j{connections}",
                        f"-T{SECONDS}", "-l", "--log-prefix", os.path.join(d, "log"), "-f", path, "tideway"],
                       capture_output=True, text=True, check=True, cwd=d)
        latencies = []
        for name in os.listdir(d):
            if name.startswith("log"):
                with open(os.path.join(d, name)) as f:
                    latencies += [int(line.split()[2]) / 1000 for line in f if line.strip()]
    return SECONDS, statistics.median(latencies)


def pg_run(tok, doc, batch, connections, script=pg_script):
    prefix = f"p22-{uuid.uuid4().hex[:8]}-"
    before = cpu_snapshot()
    elapsed, p50 = pgbench(script(tok, doc, batch, prefix), connections)
    wait_folded()
    cpu = cpu_delta(before, cpu_snapshot())
    docs = count_and_remove(prefix)
    wait_folded()
    vacuum()
    return {"docs": docs, "rate": docs / elapsed, "cpu": cpu, "p50": p50, "bad": 0}


def median_run(runs):
    med = lambda f: statistics.median(f(r) for r in runs)
    docs = lambda r: max(r["docs"], 1)
    return {
        "rate": med(lambda r: r["rate"]),
        "p50": med(lambda r: r["p50"]),
        "cpu_ms": med(lambda r: 1000 * sum(r["cpu"].values()) / docs(r)),
        "split": {k: med(lambda r: 1000 * r["cpu"][k] / docs(r)) for k in runs[0]["cpu"]},
        "bad": sum(r["bad"] for r in runs),
    }


def measure(tok, doc, batch, connections):
    tideway, limit = [], []
    for _ in range(RUNS):
        tideway.append(tideway_run(tok, doc, batch, connections))
        limit.append(pg_run(tok, doc, batch, connections))
    return median_run(tideway), median_run(limit)


def aim(ok):
    return "aim met" if ok else "aim missed"


def main():
    assert shutil.which("pgbench") and shutil.which("wrk"), "pgbench and wrk are needed"
    tok, doc = token(), source_doc()
    size = len(json.dumps(doc))
    print(f"report of {size / 1000:.1f} KB into {PARTITION}; {CLIENTS} connections for rates; "
          f"{SECONDS} s per run, medians of {RUNS}")
    single, single_pg = measure(tok, doc, 1, CLIENTS)
    batch, batch_pg = measure(tok, doc, 25, CLIENTS)
    ack, ack_pg = measure(tok, doc, 1, 1)

    def split(m):
        s = m["split"]
        return f"worker {s['worker']:.2f} + pg {s['postgres']:.2f} + nginx {s['nginx']:.2f} + jobs {s['jobs']:.2f} + events {s['events']:.2f}"

    rows = [
        ("create 1 per push (docs/s)", f"{single['rate']:.0f}", f"{single_pg['rate']:.0f}",
         f"{single['rate'] / single_pg['rate']:.2f}x", "-"),
        ("  server CPU ms/doc", f"{single['cpu_ms']:.2f}", f"{single_pg['cpu_ms']:.2f}",
         f"{single['cpu_ms'] / single_pg['cpu_ms']:.1f}x", f"<= 1.0 ms: {aim(single['cpu_ms'] <= 1.0)}"),
        ("create 25 per push (docs/s)", f"{batch['rate']:.0f}", f"{batch_pg['rate']:.0f}",
         f"{100 * batch['rate'] / batch_pg['rate']:.0f}%", f">= 50%: {aim(batch['rate'] >= 0.5 * batch_pg['rate'])}"),
        ("  server CPU ms/doc", f"{batch['cpu_ms']:.2f}", f"{batch_pg['cpu_ms']:.2f}",
         f"{batch['cpu_ms'] / batch_pg['cpu_ms']:.1f}x", f"<= 0.25 ms: {aim(batch['cpu_ms'] <= 0.25)}"),
        ("write acknowledged p50 (ms)", f"{ack['p50']:.2f}", f"{ack_pg['p50']:.2f}",
         f"{ack['p50'] / ack_pg['p50']:.1f}x", f"<= 3 ms: {aim(ack['p50'] <= 3.0)}"),
    ]
    print()
    print(f"{'path':30} | {'Tideway':>10} | {'PostgreSQL':>10} | {'ratio':>7} | aim")
    print("-" * 90)
    for r in rows:
        print(f"{r[0]:30} | {r[1]:>10} | {r[2]:>10} | {r[3]:>7} | {r[4]}")
    print()
    print(f"CPU split, 1 per push:  {split(single)} ms/doc")
    print(f"CPU split, 25 per push: {split(batch)} ms/doc")
    print(f"CPU split, acknowledged (1 connection): {split(ack)} ms/doc; PostgreSQL alone {split(ack_pg)}")
    bad = single["bad"] + batch["bad"] + ack["bad"]
    if bad:
        print(f"WARNING: {bad} pushes answered non-2xx")


if __name__ == "__main__":
    main()
