"""Issue 22, the read side and events (Bench/22-reads.sh). Each path is measured through
nginx over HTTPS, and against its limit -- PostgreSQL alone doing the same work under the
same row-level security (the worker role, the same claims) in the same run -- with server
CPU per operation from the processes' own counters (/proc/<pid>/stat utime+stime of the
workers, nginx and every PostgreSQL process, the postmaster's reaped children included).
Bounded in count and time; prints one table; never fails on numbers. BENCH_PATHS (below)
measures only some paths, for before/after runs of one change (run it directly, with the
variables Bench/22-reads.sh sets; BENCH_PATHS=blob alone also prints each pair of legs).
The rows run on a settled stack (bench_support.settle); before them, on a stack started
less than AFTER_START s ago, the "start" path times write -> event until then."""
import base64
import json
import os
import re
import resource
import select
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

import psycopg2
import psycopg2.extensions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pull_sql as pullsql  # noqa: E402
from bench_support import https_session, pct, settle, signed_in  # noqa: E402
from proc_counters import TICK, stat, status_kb  # noqa: E402

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
STATE = os.environ["TIDEWAY_BENCH_STATE"]
ADMIN = os.environ["BENCH_ADMIN_DATABASE"]
RUN_DIR = os.path.join(STATE, "run")
HOST, PORT = urllib.parse.urlsplit(URL).hostname, urllib.parse.urlsplit(URL).port
AGENCY, OFFICER, PASSWORD = "Gabon", "gabon.officer1@demo.tideway", "tideway-demo"
ADMIN_EMAIL = "admin@demo.tideway"
PARTITION = f"agency={AGENCY}"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
# The blob row: pairs of 2 s legs (static, download), twice as many pairs as rounds.
BLOB_PAIRS = 2 * ROUNDS
BLOB_LEG_SECONDS = 2
# The paths to measure (BENCH_PATHS=full,changed measures only the pulls); all by default.
PATHS = ("start", "full", "changed", "idle", "event", "blob", "memory")
SELECTED = [p.strip() for p in os.environ.get("BENCH_PATHS", ",".join(PATHS)).split(",") if p.strip()]
assert set(SELECTED) <= set(PATHS), f"BENCH_PATHS: each of {', '.join(PATHS)}"
# The rows measure a settled stack (bench_support.settle), as Bench/events_bench.py does;
# what a start leaves is the "start" path's figure of its own: write -> event until
# PostgreSQL is AFTER_START s old. BENCH_SETTLE=0 runs the rows as they ran before the
# seventeenth round (no settling), for before/after runs of the method.
AFTER_START = float(os.environ.get("BENCH_AFTER_START", "75"))
SETTLE = os.environ.get("BENCH_SETTLE", "1") != "0"


# --- the processes' own counters

def _pidfile(path):
    try:
        return open(path).readline().strip()
    except OSError:
        return None


def _children(parent):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            s = stat(p)
            if s and str(s[0]) == parent:
                out.append(p)
    return out


def nginx_pids():
    """Every nginx instance's master (Deploy/dev/stack.sh NGINX_INSTANCES: nginx.pid, nginx-N.pid)."""
    return [pid for f in sorted(os.listdir(RUN_DIR)) if re.fullmatch(r"nginx(-\d+)?\.pid", f)
            for pid in [_pidfile(os.path.join(RUN_DIR, f))] if pid]


def worker_pids():
    return [pid for f in sorted(os.listdir(RUN_DIR)) if re.fullmatch(r"worker-\d+\.pid", f)
            for pid in [_pidfile(os.path.join(RUN_DIR, f))] if pid]


def cpu():
    """CPU seconds so far of (workers, nginx, PostgreSQL). A parent's reaped children
    (cutime) count, so backends that came and went (pgbench) are not lost."""
    def total(pids, reaped_of=()):
        t = 0
        for pid in pids:
            s = stat(pid)
            if s:
                t += s[1] + (s[2] if pid in reaped_of else 0)
        return t / TICK
    workers = worker_pids()
    masters = nginx_pids()
    postmaster = _pidfile(os.path.join(STATE, "pg", "postmaster.pid"))
    return (total(workers),
            sum(total([m] + _children(m), reaped_of=(m,)) for m in masters),
            total([postmaster] + _children(postmaster), reaped_of=(postmaster,)) if postmaster else 0.0)


class Meter:
    """CPU of the server processes over a block: `with Meter() as m: ...; m.total, m.parts`."""
    def __enter__(self):
        time.sleep(0.2)
        self.before = cpu()
        return self

    def __exit__(self, *exc):
        time.sleep(0.3)  # let the postmaster reap what ended
        after = cpu()
        self.parts = tuple(a - b for a, b in zip(after, self.before))
        self.total = sum(self.parts)


def rss_mb(pids):
    return sum(status_kb(pid) for pid in pids) / 1024


# --- clients

class Api:
    def __init__(self, encoding="gzip"):
        self.http = https_session(CA)
        r = self.http.post(URL + "/api/v1/auth/login", json={"email": OFFICER, "password": PASSWORD})
        r.raise_for_status()
        self.token = r.json()["accessToken"]
        self.http.headers["Authorization"] = f"Bearer {self.token}"
        self.http.headers["Accept-Encoding"] = encoding

    def post(self, path, body):
        r = self.http.post(URL + path, json=body, timeout=300)
        r.raise_for_status()
        return r


def admin_sql(query, args=()):
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute(query, args)
        return cur.fetchall() if cur.description else None


def since_start():
    """Seconds since this stack's PostgreSQL started (make bench starts it anew)."""
    return admin_sql("select extract(epoch from now() - pg_postmaster_start_time())::float")[0][0]


def clock():
    rows = admin_sql("select seq, compacted_seq from app.partition_clocks where partition = %s", (PARTITION,))
    return rows[0] if rows else (0, 0)


def pull_sql(token, seq=0, coll="", ident="", limit=10001):
    return pullsql.pull_sql(token, PARTITION, seq, coll, ident, limit)


def pgbench(script, transactions=None, clients=1, seconds=None):
    """(average latency s, transactions/s, transactions, server CPU s) of `script` as tideway_worker."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    args = ["pgbench", "-n", "-h", RUN_DIR, "-U", "tideway_worker", "-c", str(clients), "-j", str(min(clients, 2)),
            "-f", f.name, "tideway"]
    args += ["-T", str(seconds)] if seconds else ["-t", str(transactions)]
    try:
        with Meter() as m:
            out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    latency = float(re.search(r"latency average = ([0-9.]+) ms", out).group(1)) / 1000
    tps = float(re.search(r"tps = ([0-9.]+)", out).group(1))
    done = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    return latency, tps, done, m.parts[2]


def med(values):
    return statistics.median(values)


# --- (1) the full pull of one agency, (2) the pull of the 100 changed

def http_pulls(api, body, n):
    """(median wall s, server CPU s per pull, bytes on the wire, changes)."""
    walls = []
    with Meter() as m:
        for _ in range(n):
            # To the last byte on the wire; the client's gunzip and JSON parsing are not the server's.
            start = time.perf_counter()
            r = api.http.post(URL + "/api/v1/sync/pull", json=body, stream=True, timeout=300)
            r.raise_for_status()
            wire = r.raw.read(decode_content=False)
            walls.append(time.perf_counter() - start)
    entry = api.post("/api/v1/sync/pull", body).json()["partitions"][PARTITION]
    return med(walls), m.total / n, m.parts, len(entry["changes"]), len(wire)


def bench_full_pull(api):
    body = {"partitions": {PARTITION: None}, "limit": 10000}
    first = api.post("/api/v1/sync/pull", body).json()["partitions"][PARTITION]
    assert first["status"] == "ok", first
    runs, dbs = [], []
    for _ in range(ROUNDS):  # alternate, so both sides see the same machine
        runs.append(http_pulls(api, body, 3))
        lat, _, done, db_cpu = pgbench(pull_sql(api.token), transactions=3)
        dbs.append((lat, db_cpu / done))
    wall, cpu_op = med(r[0] for r in runs), med(r[1] for r in runs)
    parts = tuple(med(r[2][i] / 3 for r in runs) for i in range(3))
    return dict(changes=runs[0][3], bytes=runs[0][4], wall=wall, cpu=cpu_op, parts=parts,
                db_wall=med(d[0] for d in dbs), db_cpu=med(d[1] for d in dbs))


def bench_changed_pull(api):
    # The cursor at the partition's end, then 100 reports changed by a push (the write path).
    cursor = current(api, None)
    seq, _ = clock()
    ids = [row[0] for row in admin_sql("select id from sync.reports where partition = %s and not deleted "
                                       "order by id limit 100", (PARTITION,))]
    changes = [{"changeId": uuid.uuid4().hex, "collection": "reports", "partition": PARTITION, "id": i, "op": "update",
                "patch": {"vessel": {"name": f"Bench {uuid.uuid4().hex[:8]}"}}} for i in ids]
    results = api.post("/api/v1/sync/push", {"clientId": "reads-bench", "changes": changes}).json()["results"]
    assert all(r["status"] == "applied" for r in results), results[:3]
    body = {"partitions": {PARTITION: cursor}, "limit": 1000}
    runs, dbs = [], []
    for _ in range(ROUNDS):
        runs.append(http_pulls(api, body, 20))
        lat, _, done, db_cpu = pgbench(pull_sql(api.token, seq, "~", "", 1001), transactions=20)
        dbs.append((lat, db_cpu / done))
    parts = tuple(med(r[2][i] / 20 for r in runs) for i in range(3))
    return dict(changes=runs[0][3], wall=med(r[0] for r in runs), cpu=med(r[1] for r in runs), parts=parts,
                db_wall=med(d[0] for d in dbs), db_cpu=med(d[1] for d in dbs), cursor=cursor)


# --- (3) 32 clients idle-polling

def wrk(url, script=None, seconds=5, connections=32):
    args = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script:
        args += ["-s", script]
    client = resource.getrusage(resource.RUSAGE_CHILDREN)
    with Meter() as m:
        out = subprocess.run(args + [url], capture_output=True, text=True, check=True).stdout
    client = [a - b for a, b in zip(resource.getrusage(resource.RUSAGE_CHILDREN)[:2], client[:2])]
    done = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    p99 = re.search(r"99%\s+([0-9.]+)(us|ms|s)", out)
    p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return dict(rps=rps, p99=p99_ms, bad=int(bad.group(1)) if bad else 0, cpu=m.total / max(done, 1),
                parts=tuple(p / max(done, 1) for p in m.parts), client=sum(client) / max(done, 1))


def current(api, cursor):
    """The cursor at the partition's end, paging on from `cursor`."""
    more = True
    while more:
        entry = api.post("/api/v1/sync/pull", {"partitions": {PARTITION: cursor}, "limit": 10000}).json()
        entry = entry["partitions"][PARTITION]
        cursor, more = entry["cursor"], entry["more"]
    return cursor


def idle_poll_script(token, body):
    """wrk's Lua script of one poll, the JSON `body` posted with `token`: its path (the caller
    unlinks it)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
                f'wrk.headers["Content-Type"] = "application/json"\n'
                f'wrk.headers["Accept-Encoding"] = "gzip"\n'
                f'wrk.headers["Authorization"] = "Bearer {token}"\n')
    return f.name


def bench_idle(api, cursor):
    cursor = current(api, cursor)
    body = json.dumps({"partitions": {PARTITION: cursor}, "limit": 100})
    r = api.post("/api/v1/sync/pull", json.loads(body)).json()["partitions"][PARTITION]
    assert r["changes"] == [] and r["status"] == "ok", "the cursor must be current"
    seq, horizon = clock()
    script = idle_poll_script(api.token, body)
    statement = (f"select app.unchanged(sha256(convert_to('{api.token}', 'UTF8')), array['{PARTITION}'], "
                 f"array[{seq}]::bigint[], array[{horizon}]::bigint[]);\n")
    polls, dbs = [], []
    try:
        for _ in range(ROUNDS):
            polls.append(wrk(URL + "/api/v1/sync/pull", script))
            lat, tps, done, db_cpu = pgbench(statement, clients=32, seconds=5)
            dbs.append((tps, db_cpu / done))
    finally:
        os.unlink(script)
    return dict(rps=med(p["rps"] for p in polls), p99=med(p["p99"] for p in polls), bad=sum(p["bad"] for p in polls),
                cpu=med(p["cpu"] for p in polls), parts=tuple(med(p["parts"][i] for p in polls) for i in range(3)),
                db_rps=med(d[0] for d in dbs), db_cpu=med(d[1] for d in dbs))


# --- (4) write -> event at one subscriber

class Subscriber(threading.Thread):
    """One SSE stream of the partition; records the arrival time of every `data:` line."""
    def __init__(self, token):
        super().__init__(daemon=True)
        context = ssl.create_default_context(cafile=CA)
        raw = socket.create_connection((HOST, PORT))
        self.sock = context.wrap_socket(raw, server_hostname=HOST)
        self.sock.sendall((f"GET /api/v1/sync/events?partition={urllib.parse.quote(PARTITION, safe='')} HTTP/1.1\r\n"
                           f"Host: {HOST}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {token}\r\n\r\n").encode())
        self.file = self.sock.makefile("rb")
        status = self.file.readline()
        assert b" 200 " in status, status
        while self.file.readline() not in (b"\r\n", b""):
            pass
        self.arrivals, self.stop = [], False

    def run(self):
        while not self.stop:
            line = self.file.readline()
            if not line:
                return
            if line.startswith(b"data:"):
                self.arrivals.append((time.perf_counter(), line))


def subscribed(api):
    """A subscriber of the partition, started, and a second session that writes."""
    sub = Subscriber(api.token)
    sub.start()
    time.sleep(0.5)
    return sub, Api()


def lone_write_and_event(writer, sub, rid):
    """Pushes report `rid` alone as `writer` and waits up to 2 s for `sub`'s next event:
    (sent, acked, the event as (arrival time, line) or None), times from time.perf_counter.
    The write -> event row's step, also traced by Bench/event_trace.py."""
    change = {"changeId": rid, "collection": "reports", "partition": PARTITION, "id": rid, "op": "insert",
              "doc": {"_id": rid, "timestamp": "2026-11-21T10:00:00Z"}}
    seen = len(sub.arrivals)
    sent = time.perf_counter()
    results = writer.post("/api/v1/sync/push", {"clientId": "reads-bench-ev", "changes": [change]}).json()["results"]
    acked = time.perf_counter()
    assert results[0]["status"] == "applied", results
    deadline = time.time() + 2
    while len(sub.arrivals) == seen and time.time() < deadline:
        time.sleep(0.0002)
    return sent, acked, (sub.arrivals[seen] if len(sub.arrivals) > seen else None)


def bench_after_start(api):
    """Write -> event during a start's first AFTER_START s, the event row's step 20 ms apart
    from now until then: what the rows, measured on a settled stack, no longer hold. After
    a start, autovacuum's first pass (~40-50 s) writes while the commits wait for the disk's
    flush (docs/performance/round-17.md, "The read rows on a settled stack"). None
    when the stack is older than that (a run against a stack that has been up)."""
    left = AFTER_START - since_start()
    if left <= 0:
        return None
    sub, writer = subscribed(api)
    latencies, acks, created = [], [], []
    began = since_start()
    deadline = time.time() + left
    while time.time() < deadline:
        rid = f"bench-st-{uuid.uuid4().hex[:16]}"
        created.append(rid)
        sent, acked, received = lone_write_and_event(writer, sub, rid)
        acks.append((acked - sent) * 1000)
        if received:
            latencies.append((received[0] - sent) * 1000)
        time.sleep(0.02)
    sub.stop = True
    ended = since_start()
    admin_sql("delete from sync.reports where id = any(%s)", (created,))
    vacuumed, analyzed = admin_sql(
        "select count(*) filter (where last_autovacuum >= pg_postmaster_start_time()), "
        "count(*) filter (where last_autoanalyze >= pg_postmaster_start_time()) from pg_stat_all_tables")[0]
    return dict(n=len(latencies), writes=len(created), began=began, ended=ended, p50=pct(latencies, .5),
                p99=pct(latencies, .99), max=max(latencies, default=float("nan")), ack_p50=pct(acks, .5),
                ack_p99=pct(acks, .99), vacuumed=vacuumed, analyzed=analyzed)


# Uncounted writes before the event row's 200 (both legs). 0 since the servers warm themselves
# at start (docs/performance/round-11.md, "A restart's first push and event"); BENCH_EVENT_WARM_UP=20
# runs the row as the tenth round did.
WARM_UP = int(os.environ.get("BENCH_EVENT_WARM_UP", "0"))


def bench_event(api, cursor, writes=200):
    """Write -> event, and write -> document in hand: the subscriber, a device that holds the
    partition's cursor, applies an event that carries the change at its cursor (`after`),
    else (a thin event) pulls from its cursor as before. 200 writes, so that the p99 is not
    simply the slowest one (with 60 it was: one slow fsync decided the figure). Also how
    long after the writer's own acknowledgement the event arrives: what the publisher and
    nchan add to the durable commit both wait for.

    Both legs may first make WARM_UP writes they do not count (none by default). `make bench`
    starts the stack anew, and the row's writes were the first lone pushes it served: the
    first push on each worker's pooled backend cost ~11 ms more of PostgreSQL CPU and the
    publisher's first read ~16-23 ms, so the row's first event took 26-125 ms and decided the
    p99 (docs/performance/round-10.md, "The event tail in the full bench"); the tenth round made 20
    uncounted writes. The workers and the publisher now warm those backends at start, so the
    row counts its first write as a device after a restart would (docs/performance/round-11.md, "A
    restart's first push and event": without the uncounted writes, the first event ranked
    4th-83rd of 200, not 1st-9th as before)."""
    sub, writer = subscribed(api)
    created = []
    for _ in range(WARM_UP):
        rid = f"bench-ev-{uuid.uuid4().hex[:16]}"
        created.append(rid)
        lone_write_and_event(writer, sub, rid)
        time.sleep(0.02)
    cursor = current(api, cursor)
    latencies, after_ack = [], []
    in_hand, by_pull, carried = [], [], 0
    # BENCH_EVENT_LOG=<file>: each write's wall time sent and latencies, one JSON line each, for
    # Bench/tail_sampler.py to set beside what the server ran meanwhile.
    trace = open(os.environ["BENCH_EVENT_LOG"], "a") if os.environ.get("BENCH_EVENT_LOG") else None
    wall = time.time() - time.perf_counter()
    for n in range(writes):
        rid = f"bench-ev-{uuid.uuid4().hex[:16]}"
        created.append(rid)
        sent, acked, received = lone_write_and_event(writer, sub, rid)
        if received:
            arrived, line = received
            latencies.append((arrived - sent) * 1000)
            after_ack.append((arrived - acked) * 1000)
            if trace:
                trace.write(json.dumps(dict(sent=wall + sent, event=latencies[-1], ack=(acked - sent) * 1000)) + "\n")
            event = json.loads(line[len(b"data:"):])
            # What a thin event costs (before): the event, then a pull from the cursor held.
            pulling = time.perf_counter()
            pulled = current(api, cursor)
            by_pull.append((arrived - sent + time.perf_counter() - pulling) * 1000)
            if event.get("after") == cursor and any(c["id"] == rid for c in event.get("changes", [])):
                assert event["cursor"] == pulled, "an event's cursor must be the pull's"
                carried += 1
                in_hand.append((arrived - sent) * 1000)
            else:
                in_hand.append(by_pull[-1])
            cursor = pulled
        time.sleep(0.02)
    sub.stop = True
    if trace:
        trace.close()
    sample = sub.arrivals[-1][1].decode()[:300] if sub.arrivals else ""
    admin_sql("delete from sync.reports where id = any(%s)", (created,))
    # The limit: a commit that takes the partition's clock (app.tick, which notifies), heard by a LISTENing PostgreSQL session.
    listener = psycopg2.connect(ADMIN)
    listener.set_isolation_level(psycopg2.extensions.ISOLATION_LEVEL_AUTOCOMMIT)
    listener.cursor().execute("listen tideway_changes")
    source = psycopg2.connect(ADMIN)
    source.autocommit = True
    db = []
    ids = []
    with source.cursor() as cur:
        for n in range(WARM_UP + writes):
            rid = f"bench-ev-{uuid.uuid4().hex[:16]}"
            ids.append(rid)
            listener.notifies.clear()
            start = time.perf_counter()
            cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, %s, %s::jsonb, app.tick(%s))",
                        (rid, PARTITION, json.dumps({"_id": rid, "timestamp": "2026-11-21T10:00:00Z"}), PARTITION))
            while not listener.notifies:
                if select.select([listener], [], [], 2) == ([], [], []):
                    break
                listener.poll()
            if listener.notifies and n >= WARM_UP:
                db.append((time.perf_counter() - start) * 1000)
            time.sleep(0.02)
        cur.execute("delete from sync.reports where id = any(%s)", (ids,))
    listener.close()
    source.close()
    return dict(n=len(latencies), writes=writes, p50=pct(latencies, .5), p99=pct(latencies, .99),
                db_p50=pct(db, .5), db_p99=pct(db, .99), sample=sample, carried=carried,
                ack_p50=pct(after_ack, .5), ack_p99=pct(after_ack, .99),
                hand_p50=pct(in_hand, .5), hand_p99=pct(in_hand, .99),
                pull_p50=pct(by_pull, .5), pull_p99=pct(by_pull, .99))


# --- (5) worker RSS after a mixed load

def bench_memory(api, cursor, rounds=4):
    """Rounds of: 10 full pulls, 20 pushes of a photo with a ~300 KB inline picture,
    30 pages, 2 CSV exports, 300 idle polls. RSS of all workers after each round."""
    pids = worker_pids()
    start = rss_mb(pids)
    officer = signed_in(URL, CA, OFFICER)
    admin = signed_in(URL, CA, ADMIN_EMAIL)
    picture = base64.b64encode(b"\xff\xd8\xff\xe0" + os.urandom(300_000)).decode()
    full = {"partitions": {PARTITION: None}, "limit": 10000}
    idle = {"partitions": {PARTITION: None}, "limit": 100}
    after, requests_done, photos = [], 0, []
    for _ in range(rounds):
        for _ in range(10):
            api.post("/api/v1/sync/pull", full)
        for _ in range(20):
            pid = f"bench-ph-{uuid.uuid4().hex[:16]}"
            photos.append(pid)
            api.post("/api/v1/sync/push", {"clientId": "reads-bench-mem", "changes": [
                {"changeId": pid, "collection": "photos", "partition": PARTITION, "id": pid, "op": "insert",
                 "doc": {"_id": pid, "date": "2026-01-01T00:00:00Z", "picture": picture}}]})
        for i in range(30):
            officer.get(URL + ["/", "/boardings?size=100", "/agencies/Gabon/dashboard"][i % 3])
        for _ in range(2):
            with admin.get(URL + "/boardings.csv", stream=True) as r:
                for _ in r.iter_content(65536):
                    pass
        cursor = current(api, cursor)  # idle polls from the partition's end
        idle = {"partitions": {PARTITION: cursor}, "limit": 100}
        for _ in range(300):
            api.post("/api/v1/sync/pull", idle)
        requests_done += 10 + 20 + 30 + 2 + 300
        after.append(rss_mb(pids))
    admin_sql("delete from sync.photos where id = any(%s)", (photos,))
    return dict(start=start, after=after, requests=requests_done, workers=len(pids))


# --- (6) authorized blob download vs nginx serving the same file

def bench_blob(api):
    size = 2 * 1024 * 1024
    data = b"\xff\xd8\xff\xe0" + os.urandom(size - 4)
    pid = f"bench-{uuid.uuid4().hex}"
    api.post("/api/v1/sync/push", {"clientId": "reads-bench-blob", "changes": [
        {"changeId": pid, "collection": "photos", "partition": PARTITION, "id": pid, "op": "insert",
         "doc": {"date": "2026-01-01T00:00:00Z"}}]})
    api.http.put(URL + f"/api/v1/blobs/{pid}", data=data, headers={"Content-Type": "image/jpeg"}).raise_for_status()
    assert api.http.get(URL + f"/api/v1/blobs/{pid}").content == data
    static_name = f".bench-blob-{os.getpid()}.bin"
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    static_path = os.path.join(repo, "Static", static_name)
    with open(static_path, "wb") as f:
        f.write(data)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(f'wrk.headers["Authorization"] = "Bearer {api.token}"\n')
    statics, downs = [], []
    static_url, down_url = URL + "/static/" + static_name, URL + f"/api/v1/blobs/{pid}"
    try:
        # Both paths warmed first (page cache, TLS sessions, nginx's open file, a worker's
        # memory of the photo), unmeasured.
        wrk(static_url, seconds=1, connections=16)
        wrk(down_url, f.name, seconds=1, connections=16)
        # Short legs in pairs, each pair's two legs back to back and in turn first (static,
        # download, download, static, ...), so a pair's legs see the same machine and a drift
        # in its load favours neither side; the ratio is the median of the pairs' ratios
        # (docs/performance/round-10.md, "Blobs, tenth round").
        for i in range(BLOB_PAIRS):
            legs = [(statics, static_url, None), (downs, down_url, f.name)]
            for runs, url, script in (legs if i % 2 == 0 else legs[::-1]):
                runs.append(wrk(url, script, seconds=BLOB_LEG_SECONDS, connections=16))
    finally:
        os.unlink(f.name)
        os.unlink(static_path)
    machine = lambda r: r["cpu"] + r["client"]
    pairs = lambda ratios: dict(median=med(ratios), low=min(ratios), high=max(ratios))
    return dict(static=med(s["rps"] for s in statics), down=med(d["rps"] for d in downs),
                ratio=pairs([d["rps"] / s["rps"] for d, s in zip(downs, statics)]),
                machine_ratio=pairs([machine(s) / machine(d) for d, s in zip(downs, statics)]),
                static_cpu=med(s["cpu"] for s in statics), down_cpu=med(d["cpu"] for d in downs),
                static_client=med(s["client"] for s in statics), down_client=med(d["client"] for d in downs),
                down_parts=tuple(med(d["parts"][i] for d in downs) for i in range(3)),
                bad=sum(d["bad"] for d in downs) + sum(s["bad"] for s in statics), rounds=downs, static_rounds=statics)


PAD_NOTES = [{"note": "Crew list checked against the permit; two licences photographed for the record, both valid "
                      "until next season. Captain cooperative throughout the boarding."},
             {"note": "Safety equipment: life jackets for all crew, one fire extinguisher past its service date; "
                      "advised to replace it before the next trip. EPIRB registered and armed."},
             {"note": "Catch sampled from the forward hold: species and sizes consistent with the declared fishery, "
                      "no protected species found; hold temperature acceptable, ice adequate."},
             {"note": "Logbook pages for the last week reviewed with the captain; positions agree with the AIS "
                      "track shown on the patrol vessel's display. Copy of the last landing receipt taken."},
             {"note": "Gear inspected on deck: hooks, lines and floats in order; no unmarked gear aboard; mesh "
                      "sizes of the spare nets measured and within the permitted range for this area."}]


def pad_reports():
    """The issue's data are reports of ~2.3 KB; the demo's are ~1.3 KB: longer notes, once."""
    admin_sql("update sync.reports set doc = jsonb_set(doc, '{notes}', coalesce(doc->'notes', '[]') || %s::jsonb) "
              "where partition = %s and not deleted and length(doc::text) < 1800", (json.dumps(PAD_NOTES), PARTITION))


def main():
    pad_reports()
    api = Api()
    print(f"agency {AGENCY}: {admin_sql('select count(*) from sync.reports where partition = %s and not deleted', (PARTITION,))[0][0]} reports, "
          f"average {admin_sql('select avg(length(doc::text))::int from sync.reports where partition = %s', (PARTITION,))[0][0]} bytes of JSON")
    def run(path, bench, *args):
        if path not in SELECTED:
            return None
        # When each row runs, in seconds after PostgreSQL's start, to set beside its log
        # (autovacuum's first pass runs ~40-50 s after a start: docs/performance/round-16.md,
        # "No JIT in Tideway's sessions, and the stall after a start").
        print(f"{path}: from +{since_start():.0f} s after PostgreSQL's start", flush=True)
        result = bench(api, *args)
        print(f"{path}: to +{since_start():.0f} s", flush=True)
        return result
    start = run("start", bench_after_start) if SETTLE else None
    if SETTLE:
        settle(ADMIN, STATE, "the rows")
    full = run("full", bench_full_pull)
    changed = run("changed", bench_changed_pull)
    # The later paths start from the cursor the changed pull began at (or the partition's end).
    cursor = changed["cursor"] if changed else current(api, None)
    idle = run("idle", bench_idle, cursor)
    event = run("event", bench_event, cursor)
    blob = run("blob", bench_blob)
    if blob and SELECTED == ["blob"]:
        # The blob path alone is for before/after runs of the download path: each pair too.
        for d, st in zip(blob["rounds"], blob["static_rounds"]):
            print(f"pair: static {st['rps']:.0f}/s CPU {st['cpu'] * 1000:.3f} ms | download {d['rps']:.0f}/s "
                  f"CPU {d['cpu'] * 1000:.3f} ms ({' / '.join(f'{p * 1000:.3f}' for p in d['parts'])}) | "
                  f"{100 * d['rps'] / st['rps']:.0f}% | wrk's own CPU {st['client'] * 1000:.3f} / {d['client'] * 1000:.3f} ms")
    memory = run("memory", bench_memory, cursor)

    def aim(ok):
        return "met" if ok else "MISSED"
    ms = lambda s: f"{s * 1000:.1f} ms"
    spread = lambda r: f"{100 * r['median']:.0f}% ({100 * r['low']:.0f}-{100 * r['high']:.0f}%)"
    rows = []
    if start:
        rows += [
            (f"write -> event, +{start['began']:.0f}-{start['ended']:.0f} s after a start ({start['n']}/{start['writes']})",
             f"p50 {start['p50']:.1f}, p99 {start['p99']:.1f}, max {start['max']:.0f} ms",
             f"autovacuum: {start['vacuumed']} tables vacuumed, {start['analyzed']} analyzed", "",
             "(the rows below: settled)"),
            (f"  write acknowledged in it", f"p50 {start['ack_p50']:.1f} ms, p99 {start['ack_p99']:.1f} ms", "", "", ""),
        ]
    if full:
        rows += [
            (f"full pull, {full['changes']} changes ({full['bytes'] / 1e6:.1f} MB gzip)", f"{ms(full['wall'])}; CPU {ms(full['cpu'])}",
             f"{ms(full['db_wall'])}; CPU {ms(full['db_cpu'])}",
             f"wall {full['wall'] / full['db_wall']:.2f}x, CPU {full['cpu'] / full['db_cpu']:.2f}x",
             f"CPU <= 2x {aim(full['cpu'] <= 2 * full['db_cpu'])}, wall <= 1.3x {aim(full['wall'] <= 1.3 * full['db_wall'])}"),
            (f"  its CPU: workers / nginx / PostgreSQL", " / ".join(ms(p) for p in full["parts"]), "", "", ""),
        ]
    if changed:
        rows += [
            (f"pull of the {changed['changes']} changed", f"{ms(changed['wall'])}; CPU {ms(changed['cpu'])}",
             f"{ms(changed['db_wall'])}; CPU {ms(changed['db_cpu'])}",
             f"wall {changed['wall'] / changed['db_wall']:.2f}x, CPU {changed['cpu'] / changed['db_cpu']:.2f}x",
             f"wall <= 1.5x {aim(changed['wall'] <= 1.5 * changed['db_wall'])}"),
            (f"  its CPU: workers / nginx / PostgreSQL", " / ".join(ms(p) for p in changed["parts"]), "", "", ""),
        ]
    if idle:
        rows += [
            ("32 clients idle-polling", f"{idle['rps']:.0f}/s, p99 {idle['p99']:.1f} ms; CPU {idle['cpu'] * 1000:.3f} ms/poll"
             + (f", {idle['bad']} non-2xx" if idle["bad"] else ""),
             f"{idle['db_rps']:.0f}/s; CPU {idle['db_cpu'] * 1000:.3f} ms", f"CPU {idle['cpu'] / idle['db_cpu']:.1f}x",
             f"<= 0.15 ms {aim(idle['cpu'] <= 0.00015)}, p99 <= 10 ms {aim(idle['p99'] <= 10)}"),
            (f"  its CPU: workers / nginx / PostgreSQL", " / ".join(f"{p * 1000:.3f} ms" for p in idle["parts"]), "", "", ""),
        ]
    if event:
        rows += [
            (f"write -> event, 1 subscriber ({event['n']}/{event['writes']})", f"p50 {event['p50']:.1f} ms, p99 {event['p99']:.1f} ms",
             f"NOTIFY p50 {event['db_p50']:.2f} ms, p99 {event['db_p99']:.2f} ms",
             f"p99 {event['p99'] / event['db_p99']:.1f}x", f"p99 <= 8 ms {aim(event['p99'] <= 8)}"),
            (f"  event after the writer's ack", f"p50 {event['ack_p50']:.1f} ms, p99 {event['ack_p99']:.1f} ms", "", "", ""),
            (f"write -> document in hand ({event['carried']} carried)", f"p50 {event['hand_p50']:.1f} ms, p99 {event['hand_p99']:.1f} ms",
             f"event + pull p50 {event['pull_p50']:.1f} ms, p99 {event['pull_p99']:.1f} ms",
             f"p99 {event['hand_p99'] / event['db_p99']:.1f}x", f"p99 <= 8 ms {aim(event['hand_p99'] <= 8)}"),
        ]
    if memory:
        rows += [
            (f"worker RSS, {memory['workers']} workers, {memory['requests']} mixed req",
             f"{memory['start']:.0f} -> " + " -> ".join(f"{a:.0f}" for a in memory["after"]) + " MB",
             "64 MB per worker", f"{max(memory['after']) / memory['workers']:.0f} MB/worker",
             f"<= 64 MB {aim(max(memory['after']) / memory['workers'] <= 64)}, flat "
             f"{aim(memory['after'][-1] <= memory['after'][1] * 1.05)}"),
        ]
    if blob:
        rows += [
            ("blob download 2 MB, 16 conns", f"{blob['down']:.0f}/s; CPU {ms(blob['down_cpu'])}",
             f"nginx static {blob['static']:.0f}/s; CPU {ms(blob['static_cpu'])}",
             spread(blob["ratio"]), f">= 90% {aim(blob['ratio']['median'] >= 0.9)} (the pairs' median)"
             + (f" ({blob['bad']} errors)" if blob["bad"] else "")),
            (f"  its CPU: workers / nginx / PostgreSQL", " / ".join(ms(p) for p in blob["down_parts"]), "", "", ""),
            # Server and client share the machine's cores, so on a machine nothing else loads the
            # rate ratio tends to the ratio of machine CPU per request; this one moves far less
            # with other load than the rates do (docs/performance/round-05.md, "Blobs, fifth round").
            (f"  machine CPU (server + wrk) per request", f"{ms(blob['down_cpu'] + blob['down_client'])}",
             f"{ms(blob['static_cpu'] + blob['static_client'])}",
             spread(blob["machine_ratio"]), ""),
        ]
    print()
    print(f"{'path':44} | {'Tideway':44} | {'limit (same run)':36} | {'ratio':20} | aim")
    print("-" * 180)
    for r in rows:
        print(f"{r[0]:44} | {r[1]:44} | {r[2]:36} | {r[3]:20} | {r[4]}")
    if event:
        print(f"\nan event as received: {event['sample'].strip()[:200]}")


if __name__ == "__main__":
    main()
