"""Drives Bench/03-sync.sh: measures (a) initial pull, (b) push, (c) idle polling, each
against its baseline, and prints one table. Medians of a few runs; never fails on numbers."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import psycopg2
import requests

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pull_sql as pullsql  # noqa: E402
from bench_support import median_time  # noqa: E402

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
ADMIN = os.environ["BENCH_ADMIN_DATABASE"]
WORKER = os.environ["BENCH_WORKER_DATABASE"]
RUN_DIR = os.path.join(os.environ["TIDEWAY_BENCH_STATE"], "run")
AGENCY, OFFICER, PASSWORD = "Gabon", "gabon.officer1@demo.tideway", "tideway-demo"
PARTITION = f"agency={AGENCY}"


class Api:
    def __init__(self):
        self.http = requests.Session()
        r = self.http.post(URL + "/api/v1/auth/login", json={"email": OFFICER, "password": PASSWORD}, verify=CA)
        r.raise_for_status()
        self.token = r.json()["accessToken"]
        self.http.headers["Authorization"] = f"Bearer {self.token}"
        # Uncompressed, like the database baseline: gzip would be nginx's work, not the sync's.
        self.http.headers["Accept-Encoding"] = "identity"

    def post(self, path, body):
        r = self.http.post(URL + path, json=body, verify=CA, timeout=300)
        r.raise_for_status()
        return r


# (a) initial pull

def pull_sql(token):
    """The SQL of one pull from a null cursor, as PullQuery.swift writes it (Bench/pull_sql.py)."""
    return pullsql.pull_sql(token, PARTITION)


def pgbench_latency(script, transactions):
    """Average latency (s) of `script` over `transactions`, one connection, as tideway_worker."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(["pgbench", "-n", "-h", RUN_DIR, "-U", "tideway_worker", "-t", str(transactions),
                              "-f", f.name, "tideway"], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    return float(re.search(r"latency average = ([0-9.]+) ms", out).group(1)) / 1000


def bench_pull(api):
    body = {"partitions": {PARTITION: None}, "limit": 10000}
    first = api.post("/api/v1/sync/pull", body)
    entry = first.json()["partitions"][PARTITION]
    assert entry["status"] == "ok" and not entry["more"], "one page expected"
    changes, size = len(entry["changes"]), len(first.content)
    https = median_time(lambda: api.post("/api/v1/sync/pull", body), 5)
    database = statistics.median(pgbench_latency(pull_sql(api.token), 3) for _ in range(3))
    return changes, size, https, database


# (b) push of 1,000 new reports

def source_reports(n):
    """n generated reports (~2-3 KB) of another agency, to push again under new ids."""
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute("select doc from sync.reports where partition = 'agency=WildAid' and not deleted "
                    "order by id limit %s", (n,))
        return [row[0] for row in cur.fetchall()]


def remove(ids):
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute("delete from sync.reports where id = any(%s)", (ids,))


def push_run(api, docs):
    ids = [f"bench-{uuid.uuid4().hex}" for _ in docs]
    client = uuid.uuid4().hex
    start = time.perf_counter()
    for i in range(0, len(docs), 100):
        changes = [{"changeId": ids[j], "collection": "reports", "partition": PARTITION, "id": ids[j],
                    "op": "insert", "doc": {**docs[j], "_id": ids[j]}} for j in range(i, min(i + 100, len(docs)))]
        results = api.post("/api/v1/sync/push", {"clientId": client, "changes": changes}).json()["results"]
        assert all(r["status"] == "applied" for r in results), results[:3]
    elapsed = time.perf_counter() - start
    remove(ids)
    return elapsed


def insert_run(docs):
    """Plain multi-row INSERTs of the same rows into the same table, one transaction per 100."""
    ids = [f"bench-{uuid.uuid4().hex}" for _ in docs]
    conn = psycopg2.connect(ADMIN)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            start = time.perf_counter()
            for i in range(0, len(docs), 100):
                rows = [(ids[j], PARTITION, json.dumps({**docs[j], "_id": ids[j]}))
                        for j in range(i, min(i + 100, len(docs)))]
                args = b",".join(cur.mogrify("(%s, %s, %s::jsonb, 0)", r) for r in rows)
                cur.execute(b"insert into sync.reports (id, partition, doc, seq) values " + args)
            elapsed = time.perf_counter() - start
    finally:
        conn.close()
    remove(ids)
    return elapsed


def bench_push(api):
    docs = source_reports(1000)
    size = statistics.mean(len(json.dumps(d)) for d in docs)
    https = statistics.median(push_run(api, docs) for _ in range(3))
    plain = statistics.median(insert_run(docs) for _ in range(3))
    return len(docs), size, len(docs) / https, len(docs) / plain


# (c) idle polling

def wrk(url, script=None, seconds=5):
    args = ["wrk", "-t2", "-c32", f"-d{seconds}s", "--latency"]
    if script:
        args += ["-s", script]
    out = subprocess.run(args + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    p99 = re.search(r"99%\s+([0-9.]+)(us|ms|s)", out)
    p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, p99_ms, int(bad.group(1)) if bad else 0


def bench_poll(api):
    cursor, more = None, True
    while more:
        entry = api.post("/api/v1/sync/pull", {"partitions": {PARTITION: cursor}, "limit": 10000}).json()
        entry = entry["partitions"][PARTITION]
        cursor, more = entry["cursor"], entry["more"]
    body = json.dumps({"partitions": {PARTITION: cursor}, "limit": 100})
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
                f'wrk.headers["Content-Type"] = "application/json"\n'
                f'wrk.headers["Authorization"] = "Bearer {api.token}"\n')
    try:
        polls, healths = [], []
        for _ in range(3):  # alternate, so that both see the same machine
            polls.append(wrk(URL + "/api/v1/sync/pull", f.name))
            healths.append(wrk(URL + "/healthz"))
    finally:
        os.unlink(f.name)
    med = lambda runs, i: statistics.median(r[i] for r in runs)
    return (med(polls, 0), med(polls, 1), sum(r[2] for r in polls), med(healths, 0), med(healths, 1),
            sum(r[2] for r in healths))


def main():
    assert shutil.which("pgbench") and shutil.which("wrk"), "pgbench and wrk are needed"
    api = Api()
    changes, size, pull_https, pull_db = bench_pull(api)
    pushed, doc_size, push_rate, insert_rate = bench_push(api)
    poll_rps, poll_p99, poll_bad, health_rps, health_p99, health_bad = bench_poll(api)
    rows = [
        ("(a) initial pull, one agency",
         f"{pull_https * 1000:.0f} ms for {changes} changes ({size / 1e6:.1f} MB) over HTTPS",
         f"{pull_db * 1000:.0f} ms in PostgreSQL (pgbench, same SQL)",
         f"{pull_https / pull_db:.2f}x the database", "aim <= 1.5x"),
        ("(b) push 1,000 reports / 100",
         f"{push_rate:.0f} docs/s (avg doc {doc_size / 1000:.1f} KB)",
         f"{insert_rate:.0f} docs/s plain INSERTs",
         f"{100 * push_rate / insert_rate:.0f}% of INSERTs", "aim >= 50%"),
        ("(c) 32 clients idle polling",
         f"{poll_rps:.0f} req/s, p99 {poll_p99:.1f} ms" + (f", {poll_bad} non-2xx" if poll_bad else ""),
         f"/healthz {health_rps:.0f} req/s, p99 {health_p99:.1f} ms" + (f", {health_bad} non-2xx" if health_bad else ""),
         f"{100 * poll_rps / health_rps:.0f}% of healthz", "aim >= 40%"),
    ]
    print()
    print(f"{'benchmark':32} | {'Tideway':48} | {'baseline':40} | {'ratio':20} | target")
    print("-" * 160)
    for r in rows:
        print(f"{r[0]:32} | {r[1]:48} | {r[2]:40} | {r[3]:20} | {r[4]}")


if __name__ == "__main__":
    main()
