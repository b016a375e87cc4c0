"""Change-event benchmark (issue 9). Loopback only, bounded in count and time."""
import asyncio
import calendar
import multiprocessing
import os
import re
import ssl
import statistics
import subprocess
import time
import urllib.parse
import uuid

import psycopg2
import requests

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
STATE = os.environ["TIDEWAY_BENCH_STATE"]
ADMIN_DB = os.environ["TIDEWAY_BENCH_ADMIN_DATABASE"]
HOST, PORT = urllib.parse.urlsplit(URL).hostname, urllib.parse.urlsplit(URL).port
SUBSCRIBERS = int(os.environ.get("EVENTS_SUBSCRIBERS", "10000"))
PROCESSES = 4
AGENCIES = ["WildAid", "Gabon", "Parque Nacional Galápagos", "Ecuadorian Galapagos"]
EVENTS = 10


def session():
    s = requests.Session()
    s.trust_env = False
    s.verify = CA
    return s


def make_user(agency):
    email = f"ev-{uuid.uuid4().hex[:10]}@bench.tideway"
    subprocess.run([".build/release/tideway", "create-user", "--database", ADMIN_DB, "--email", email, "--agency", agency,
                    "--first-name", "Event", "--last-name", "Bench"],
                   check=True, capture_output=True, env={**os.environ, "TIDEWAY_PASSWORD": "bench-password"})
    r = session().post(URL + "/api/v1/auth/login", json={"email": email, "password": "bench-password"})
    r.raise_for_status()
    return r.json()


async def subscribe(context, token, partitions, received, ready, gate):
    query = "&".join("partition=" + urllib.parse.quote(p, safe="") for p in partitions)
    # Devices do not all connect in the same millisecond: at most `gate` handshakes at once.
    async with gate:
        reader, writer = await asyncio.open_connection(HOST, PORT, ssl=context, server_hostname=HOST)
        writer.write((f"GET /api/v1/sync/events?{query} HTTP/1.1\r\nHost: {HOST}\r\nAccept: text/event-stream\r\n"
                      f"Authorization: Bearer {token}\r\n\r\n").encode())
        status = await reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(status.decode(errors="replace").strip())
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
    ready.append(1)
    while True:
        line = await reader.readline()
        if not line:
            return writer
        if line.startswith(b"data:"):
            received.append((time.time(), line))


def subscriber_process(args):
    """Holds its share of the streams; reports (count connected, arrival times of events)."""
    tokens_partitions, seconds, go = args
    context = ssl.create_default_context(cafile=CA)
    received, ready = [], []

    async def main():
        gate = asyncio.Semaphore(64)
        tasks = [asyncio.create_task(subscribe(context, token, partitions, received, ready, gate))
                 for token, partitions in tokens_partitions]
        await asyncio.sleep(seconds)
        failures = {}
        for t in tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                reason = str(t.exception())[:60] or type(t.exception()).__name__
                failures[reason] = failures.get(reason, 0) + 1
            t.cancel()
        return failures

    failed = asyncio.run(main())
    return len(ready), failed, received


def rss_kb(name):
    """RSS of this stack's nginx (master and workers) or workers, found from its pid files."""
    run = os.path.join(STATE, "run")
    if name == "nginx":
        master = open(os.path.join(run, "nginx.pid")).read().strip()
        pids = [master] + [p for p in os.listdir("/proc") if p.isdigit() and parent(p) == master]
    else:
        pids = [open(os.path.join(run, f)).read().strip() for f in os.listdir(run) if f.startswith("worker-") and f.endswith(".pid")]
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[1]
    except OSError:
        return None


def push(token, agency):
    change = {"changeId": uuid.uuid4().hex, "collection": "reports", "partition": f"agency={agency}", "id": uuid.uuid4().hex[:24],
              "op": "insert", "doc": {"timestamp": "2026-11-21T10:00:00Z", "vessel": {
                  "name": "Bench", "homePort": "Port", "nationality": "GA", "permitNumber": "B-1"}}}
    sent = time.time()
    r = session().post(URL + "/api/v1/sync/push", json={"clientId": "ev-bench", "changes": [change]},
                       headers={"Authorization": f"Bearer {token}"})
    r.raise_for_status()
    return sent, time.time()


def main():
    per_agency = 10
    users = [make_user(a) for a in AGENCIES for _ in range(per_agency)]
    writer = {a: make_user(a)["accessToken"] for a in AGENCIES}
    base_nginx, base_workers = rss_kb("nginx"), rss_kb("tideway-worker")
    seconds = 75
    plan = [(users[i % len(users)]["accessToken"],
             [f"agency={users[i % len(users)]['user']['agency']}", f"user={users[i % len(users)]['user']['id']}"])
            for i in range(SUBSCRIBERS)]
    shares = [plan[p::PROCESSES] for p in range(PROCESSES)]
    with multiprocessing.Pool(PROCESSES) as pool:
        pending = pool.map_async(subscriber_process, [(share, seconds, None) for share in shares])
        time.sleep(40)  # all connected (checked below from the counts)
        held_nginx, held_workers = rss_kb("nginx"), rss_kb("tideway-worker")
        sends = []
        for n in range(EVENTS):
            agency = AGENCIES[n % len(AGENCIES)]
            sends.append(push(writer[agency], agency))
            time.sleep(1.5)
        results = pending.get(timeout=seconds + 60)
    connected = sum(r[0] for r in results)
    failures = {}
    for r in results:
        for reason, n in r[1].items():
            failures[reason] = failures.get(reason, 0) + n
    failed = sum(failures.values())
    arrivals = sorted(t for r in results for t, _ in r[2])
    # Each event reaches the quarter of the streams of its agency: pair arrivals with the
    # push whose window they fall in.
    from_sent, from_answered = [], []
    for i, (sent, answered) in enumerate(sends):
        end = sends[i + 1][0] if i + 1 < len(sends) else float("inf")
        window = [t for t in arrivals if sent <= t < end]
        from_sent += [(t - sent) * 1000 for t in window]
        from_answered += [max(0.0, t - answered) * 1000 for t in window]
    expected = EVENTS * SUBSCRIBERS // len(AGENCIES)

    def pct(values, q):
        values = sorted(values)
        return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")

    print(f"{connected} of {SUBSCRIBERS} streams connected ({failed} failed), spread over 4 agencies + 40 user partitions")
    for reason, n in sorted(failures.items(), key=lambda kv: -kv[1]):
        print(f"  failed: {n} × {reason}")
    print(f"memory (RSS): nginx {base_nginx / 1024:.0f} MB → {held_nginx / 1024:.0f} MB holding them "
          f"({(held_nginx - base_nginx) / max(connected, 1):.1f} KB per stream); workers {base_workers / 1024:.0f} MB → {held_workers / 1024:.0f} MB")
    print(f"events received: {len(from_sent)} of {expected} expected ({EVENTS} pushes × a quarter of the streams)")
    print(f"commit → event, measured from the push being sent:     p50 {pct(from_sent, .5):.1f} ms, p99 {pct(from_sent, .99):.1f} ms")
    print(f"                 measured from the push's answer:      p50 {pct(from_answered, .5):.1f} ms, p99 {pct(from_answered, .99):.1f} ms (aim p99 < 50 ms)")

    # The 10,000 streams closed at once: how many of their ends nginx's hooks reported, and
    # when the counts behind presence were right again (tideway events recounts from nginx).
    logins = [u["user"]["id"] for u in users]
    closed = time.time()

    def still_open():
        db = psycopg2.connect(ADMIN_DB)
        try:
            cur = db.cursor()
            cur.execute("select coalesce(sum(open), 0) from app.event_streams where user_id::text = any(%s)", (logins,))
            return cur.fetchone()[0]
        finally:
            db.close()

    right_after = None
    while time.time() - closed < 75:
        if still_open() == 0:
            right_after = time.time() - closed
            break
        time.sleep(0.5)
    # What the recount corrected since the close, from tideway events' log lines.
    missed = 0
    with open(os.path.join(STATE, "log", "events.log")) as log:
        for line in log:
            m = re.match(r"(\S+Z) info stream counts: (\d+) stream starts or ends were not reported", line)
            if m and calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%SZ")) >= int(closed):
                missed += int(m.group(2))
    print(f"after the {connected} streams closed at once: {missed} of their ends were never reported by nginx's hooks "
          f"and were corrected by the recount; the counts were right again "
          + (f"after {right_after:.1f} s (recount every 30 s)" if right_after is not None else "NOT within 75 s"))

    # Fan-out: 1,000 streams of one partition, one event.
    agency = "Gabon"
    fan = [u for u in users if u["user"]["agency"] == agency]
    share = [(fan[i % len(fan)]["accessToken"], [f"agency={agency}"]) for i in range(1000)]
    with multiprocessing.Pool(PROCESSES) as pool:
        pending = pool.map_async(subscriber_process, [(share[p::PROCESSES], 50, None) for p in range(PROCESSES)])
        # Time for 1,000 TLS handshakes and their subscribe hooks on this loaded machine.
        time.sleep(35)
        sent, answered = push(writer[agency], agency)
        results = pending.get(timeout=90)
    times = sorted(t for r in results for t, _ in r[2] if t >= sent)
    fan_connected = sum(r[0] for r in results)
    fan_failures = {}
    for r in results:
        for reason, n in r[1].items():
            fan_failures[reason] = fan_failures.get(reason, 0) + n
    print(f"fan-out streams connected: {fan_connected} of 1000; failures: {fan_failures or 'none'}")
    if not times:
        print("fan-out: no event arrived (streams not subscribed in time?)")
    else:
        print(f"fan-out: 1,000 streams of agency={agency}, one event: {len(times)} received; first after "
              f"{(times[0] - sent) * 1000:.1f} ms, last after {(times[-1] - sent) * 1000:.1f} ms from the push being sent "
              f"({(times[-1] - answered) * 1000:.1f} ms after its answer)")


if __name__ == "__main__":
    main()
