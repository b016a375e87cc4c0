"""Change-event benchmark (issue 9). Loopback only, bounded in count and time.

The subscribers run on the same cores as the server, so each event's latency is given twice:
when the subscriber's process read it (what a device would see if it were that loaded) and
when it reached the subscriber's socket (the kernel's receive time, SO_TIMESTAMPNS: nginx
has written it; the server's part, though still on cores the subscribers share), with the CPU
of the server's processes and of the subscribers' over the pushes. EVENTS_LATENCY_ONLY=1
stops after the latency (no recount or fan-out phase); EVENTS_PROCESSES sets how many
processes hold the streams (4), EVENTS_PUSHES how many pushes are timed (10).

The subscribers are the load generator, on the server's two cores: over the pushes they run
at the scheduler's idle policy (SCHED_IDLE), so that they take a core only when no server
process wants it, as clients on other machines would (EVENTS_SUBSCRIBERS_SCHED=normal: as
any process; they connect as any process either way). Their reads are late then, the
sockets' receive times are not: the kernel stamps those when nginx's write arrives. Every
event counted is checked: it must name its push's partition and carry its report with the
pushed content (or be thin). The writers push on kept-alive connections, as
devices do (a new TLS handshake per push was timed as part of the write before).
EVENTS_NETNS=<name> EVENTS_ADDRESS=<ip>: the subscriber processes join that network
namespace (ip netns) and connect to that address (e.g. over a veth pair), so that the
receive half of each TCP write is not loopback's."""
import asyncio
import calendar
import ctypes
import json
import multiprocessing
import os
import re
import ssl
import socket
import statistics
import struct
import subprocess
import time
import urllib.parse
import uuid

import psycopg2

from bench_support import https_session, pct, settle
from proc_counters import TICK, family_ticks, processes, read_pid, stat, status_kb

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
STATE = os.environ["TIDEWAY_BENCH_STATE"]
ADMIN_DB = os.environ["BENCH_ADMIN_DATABASE"]
HOST, PORT = urllib.parse.urlsplit(URL).hostname, urllib.parse.urlsplit(URL).port
SUBSCRIBERS = int(os.environ.get("EVENTS_SUBSCRIBERS", "10000"))
PROCESSES = int(os.environ.get("EVENTS_PROCESSES", "4"))
AGENCIES = ["WildAid", "Gabon", "Parque Nacional Galápagos", "Ecuadorian Galapagos"]
EVENTS = int(os.environ.get("EVENTS_PUSHES", "10"))  # pushes, each to a quarter of the streams
SCHED = os.environ.get("EVENTS_SUBSCRIBERS_SCHED", "idle")
NETNS, ADDRESS = os.environ.get("EVENTS_NETNS"), os.environ.get("EVENTS_ADDRESS") or HOST


def make_user(agency):
    email = f"ev-{uuid.uuid4().hex[:10]}@bench.tideway"
    subprocess.run([".build/release/tideway", "create-user", "--database", ADMIN_DB, "--email", email, "--agency", agency,
                    "--first-name", "Event", "--last-name", "Bench"],
                   check=True, capture_output=True, env={**os.environ, "TIDEWAY_PASSWORD": "bench-password"})
    r = https_session(CA).post(URL + "/api/v1/auth/login", json={"email": email, "password": "bench-password"})
    r.raise_for_status()
    return r.json()


SO_TIMESTAMPNS = 35  # Linux: the kernel's receive time of the bytes a read returns


async def readable(loop, sock):
    done = loop.create_future()
    loop.add_reader(sock.fileno(), lambda: done.done() or done.set_result(None))
    try:
        await done
    finally:
        loop.remove_reader(sock.fileno())


def read_now(sock, tls, incoming):
    """The decrypted bytes of one read of what the socket holds (BlockingIOError when it holds
    nothing, EOFError when the stream has ended) and the kernel's time of their arrival in the
    socket (when nginx's write reached it), as against the time this process gets round to
    reading them."""
    data, ancillary, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(16))
    if not data:
        raise EOFError
    arrived = None
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            seconds, nanoseconds = struct.unpack("qq", value[:16])
            arrived = seconds + nanoseconds / 1e9
    incoming.write(data)
    plain = []
    while True:
        try:
            chunk = tls.read(65536)
        except ssl.SSLWantReadError:
            break
        except ssl.SSLZeroReturnError:
            raise EOFError
        plain.append(chunk)
    return b"".join(plain), arrived


async def receive(loop, sock, tls, incoming):
    """read_now, waiting until the socket holds something."""
    while True:
        try:
            return read_now(sock, tls, incoming)
        except BlockingIOError:
            await readable(loop, sock)


async def subscribe(context, token, partitions, received, ready, gate):
    """One stream over TLS on a plain socket (ssl.MemoryBIO, as asyncio's own TLS does), so
    that each event's kernel receive time can be read with it (SO_TIMESTAMPNS)."""
    loop = asyncio.get_running_loop()
    query = "&".join("partition=" + urllib.parse.quote(p, safe="") for p in partitions)
    sock = socket.socket()
    sock.setblocking(False)
    subscribed = False
    try:
        # Devices do not all connect in the same millisecond: at most `gate` handshakes at once.
        async with gate:
            await loop.sock_connect(sock, (ADDRESS, PORT))
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            tls = context.wrap_bio(incoming, outgoing, server_hostname=HOST)
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    await loop.sock_sendall(sock, outgoing.read())
                    await receive(loop, sock, tls, incoming)
            tls.write((f"GET /api/v1/sync/events?{query} HTTP/1.1\r\nHost: {HOST}\r\nAccept: text/event-stream\r\n"
                       f"Authorization: Bearer {token}\r\n\r\n").encode())
            await loop.sock_sendall(sock, outgoing.read())
            buffer = b""
            while b"\r\n\r\n" not in buffer:
                buffer += (await receive(loop, sock, tls, incoming))[0]
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            status = head.split(b"\r\n", 1)[0]
            if b" 200 " not in status:
                raise RuntimeError(status.decode(errors="replace").strip())
        ready.append(1)
        subscribed = True
        settled()
        # The events: read by a callback of the event loop, the socket's reader registered
        # once, not a task woken and a reader added and removed per read as above (that cost
        # the four subscriber processes ~200 ms of CPU per 2,500-stream event, twice nginx's
        # own, on the cores nginx shares with them). Stamped as before: the process's read
        # time and the socket's receive time.
        ended = loop.create_future()
        pending = [buffer]  # the bytes after the last line break

        def take(plain, arrived):
            *lines, pending[0] = (pending[0] + plain).split(b"\n")
            for line in lines:
                if line.startswith(b"data:"):
                    received.append((time.time(), arrived, line))

        def on_readable():
            try:
                take(*read_now(sock, tls, incoming))
            except BlockingIOError:
                pass
            except (EOFError, OSError, ssl.SSLError) as error:
                if not ended.done():
                    ended.set_exception(error)

        take(b"", None)

        loop.add_reader(sock.fileno(), on_readable)
        try:
            await ended
        finally:
            loop.remove_reader(sock.fileno())
    except EOFError:
        if not subscribed:
            raise RuntimeError("closed before the answer")
    finally:
        sock.close()


# Set in each subscriber process of the main phase (share_progress): how many streams are
# settled (subscribed or failed) over all processes, and when the main process is done.
_settled = _done = None


def share_progress(settled_count, done):
    global _settled, _done
    _settled, _done = settled_count, done


def settled():
    if _settled is not None:
        with _settled.get_lock():
            _settled.value += 1


def subscriber_process(args):
    """Holds its share of the streams; reports (count connected, arrival times of events)."""
    tokens_partitions, seconds, go = args
    if NETNS:  # Python 3.11 has no os.setns
        with open(f"/run/netns/{NETNS}") as ns:
            if ctypes.CDLL(None, use_errno=True).setns(ns.fileno(), 0x40000000) != 0:  # CLONE_NEWNET
                raise OSError(ctypes.get_errno(), f"setns {NETNS}")
    context = ssl.create_default_context(cafile=CA)
    received, ready = [], []

    async def main():
        gate = asyncio.Semaphore(64)
        async def one(token, partitions):
            try:
                await subscribe(context, token, partitions, received, ready, gate)
            except Exception:
                settled()
                raise

        tasks = [asyncio.create_task(one(token, partitions)) for token, partitions in tokens_partitions]
        if _done is None:
            await asyncio.sleep(seconds)
        else:  # held until the main process has measured, `seconds` at most
            deadline = time.monotonic() + seconds
            while not _done.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
        failures = {}
        for t in tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                reason = str(t.exception())[:60] or type(t.exception()).__name__
                failures[reason] = failures.get(reason, 0) + 1
            t.cancel()
        return failures

    failed = asyncio.run(main())
    return len(ready), failed, received


NGINX_PID = re.compile(r"nginx(-\d+)?\.pid")  # one per nginx instance (Deploy/dev/stack.sh NGINX_INSTANCES)


def rss_kb(name):
    """RSS of this stack's nginx (every instance's master and workers) or workers, found from
    their pid files."""
    run = os.path.join(STATE, "run")
    if name == "nginx":
        masters = [open(os.path.join(run, f)).read().strip() for f in os.listdir(run) if NGINX_PID.fullmatch(f)]
        pids = masters + [p for p in os.listdir("/proc") if p.isdigit() and parent(p) in masters]
    else:
        pids = [open(os.path.join(run, f)).read().strip() for f in os.listdir(run) if f.startswith("worker-") and f.endswith(".pid")]
    return sum(status_kb(pid) for pid in pids)


def nginx_worker_files():
    """Open files of each nginx instance's worker processes (its streams, mostly): how the
    kernel spread the streams over the instances (SO_REUSEPORT)."""
    run = os.path.join(STATE, "run")
    counts = []
    for f in sorted(os.listdir(run)):
        if NGINX_PID.fullmatch(f):
            master = open(os.path.join(run, f)).read().strip()
            files = 0
            for p in os.listdir("/proc"):
                if p.isdigit() and parent(p) == master:
                    try:
                        files += len(os.listdir(f"/proc/{p}/fd"))
                    except OSError:
                        pass
            counts.append(files)
    return counts


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def parent(pid):
    counters = stat(pid)
    return str(counters[0]) if counters else None


def cpu_seconds():
    """CPU seconds so far of this stack's server processes, part by part, and of this bench's
    subscriber processes (its children), from the processes' own counters."""
    table = processes()  # pid: (parent, own ticks, ticks of its reaped children)
    family = lambda pid, reaped=False: family_ticks(table, pid, reaped)  # noqa: E731
    run = os.path.join(STATE, "run")
    ticks = {"nginx": sum(family(read_pid(os.path.join(run, f))) for f in os.listdir(run) if NGINX_PID.fullmatch(f)),
             "workers": sum(family(read_pid(os.path.join(run, f))) for f in os.listdir(run) if re.fullmatch(r"worker-\d+\.pid", f)),
             "PostgreSQL": family(read_pid(os.path.join(STATE, "pg", "postmaster.pid")), reaped=True),
             "publisher": family(read_pid(os.path.join(run, "events.pid"))),
             "jobs": family(read_pid(os.path.join(run, "jobs.pid"))),
             "subscribers": sum(t[1] for t in table.values() if t[0] == os.getpid())}
    if NETNS:  # the clients' kernel: their end of the veth pair polled by its thread (Bench/veth_clients.py)
        ticks["clients' kernel"] = sum(t[1] for pid, t in table.items() if comm(pid).startswith(f"napi/{NETNS[:11]}-c"))
    return {part: n / TICK for part, n in ticks.items()}


def nginx_schedstat():
    """(ns on a core, ns runnable but waiting for one) so far, summed over every nginx
    instance's worker processes (/proc/<pid>/schedstat): how much of a fan-out's time nginx
    spent working and how much queued behind other processes."""
    run = os.path.join(STATE, "run")
    masters = [open(os.path.join(run, f)).read().strip() for f in os.listdir(run) if NGINX_PID.fullmatch(f)]
    ran = waited = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit() and parent(pid) in masters:
            try:
                with open(f"/proc/{pid}/schedstat") as f:
                    on_cpu, queued, _ = map(int, f.read().split())
            except (OSError, ValueError):
                continue
            ran, waited = ran + on_cpu, waited + queued
    return ran, waited


def subscribers_policy(policy):
    """Sets the scheduling policy of this bench's subscriber processes (its children)."""
    for pid in os.listdir("/proc"):
        if pid.isdigit() and parent(pid) == str(os.getpid()):
            try:
                os.sched_setscheduler(int(pid), policy, os.sched_param(0))
            except OSError:
                pass


def open_streams(logins):
    """Streams of these logins that nginx's subscribe hooks have counted (presence)."""
    db = psycopg2.connect(ADMIN_DB)
    try:
        cur = db.cursor()
        cur.execute("select coalesce(sum(open), 0) from app.event_streams where user_id::text = any(%s)", (logins,))
        return cur.fetchone()[0]
    finally:
        db.close()


def writer_session(token):
    """A writer's connection, kept alive between its pushes as a device's is."""
    s = https_session(CA)
    s.headers["Authorization"] = f"Bearer {token}"
    return s


def push(writer, agency):
    """Pushes one new report to the agency's partition: (sent, answered, its id)."""
    change = {"changeId": uuid.uuid4().hex, "collection": "reports", "partition": f"agency={agency}", "id": uuid.uuid4().hex[:24],
              "op": "insert", "doc": {"timestamp": "2026-11-21T10:00:00Z", "vessel": {
                  "name": "Bench", "homePort": "Port", "nationality": "GA", "permitNumber": "B-1"}}}
    sent = time.time()
    r = writer.post(URL + "/api/v1/sync/push", json={"clientId": "ev-bench", "changes": [change]})
    r.raise_for_status()
    return sent, time.time(), change["id"]


def carries(line, agency, report):
    """Whether an event's data line is the event of this push: its agency's partition, and
    either carrying the pushed report with its content or thin (the partition alone: a pull
    would fetch it)."""
    try:
        event = json.loads(line[5:])
    except ValueError:
        return False
    if event.get("partition") != f"agency={agency}":
        return False
    return "changes" not in event or any(
        c.get("id") == report and c.get("doc", {}).get("vessel", {}).get("name") == "Bench" for c in event["changes"])


def main():
    settle(ADMIN_DB, STATE, "the streams")
    per_agency = 10
    users = [make_user(a) for a in AGENCIES for _ in range(per_agency)]
    writer = {a: writer_session(make_user(a)["accessToken"]) for a in AGENCIES}
    # One push per agency before the streams open: the publisher's first event of a partition
    # since it started is thin (EventPublisher), the later ones carry the change; the window
    # times the steady state.
    for agency in AGENCIES:
        push(writer[agency], agency)
    base_nginx, base_workers = rss_kb("nginx"), rss_kb("tideway-worker")
    seconds = 600  # at most; the streams are held until the pushes' events are in
    plan = [(users[i % len(users)]["accessToken"],
             [f"agency={users[i % len(users)]['user']['agency']}", f"user={users[i % len(users)]['user']['id']}"])
            for i in range(SUBSCRIBERS)]
    shares = [plan[p::PROCESSES] for p in range(PROCESSES)]
    logins = [u["user"]["id"] for u in users]
    settled_count, done = multiprocessing.Value("i", 0), multiprocessing.Event()
    with multiprocessing.Pool(PROCESSES, initializer=share_progress, initargs=(settled_count, done)) as pool:
        pending = pool.map_async(subscriber_process, [(share, seconds, None) for share in shares])
        # The pushes start once every stream is settled and nginx's subscribe hooks have
        # counted the subscribed ones: pushing while streams still connect would time their
        # handshakes, authorizations and hooks too (a fixed 40 s did on a loaded machine).
        started = time.time()
        while settled_count.value < SUBSCRIBERS and time.time() - started < 300:
            time.sleep(0.5)
        while open_streams(logins) < settled_count.value and time.time() - started < 360:
            time.sleep(0.5)
        print(f"streams settled and their hooks counted after {time.time() - started:.0f} s")
        held_nginx, held_workers = rss_kb("nginx"), rss_kb("tideway-worker")
        spread = nginx_worker_files()
        sends = []
        for agency in AGENCIES:  # each writer's connection opened before the window
            writer[agency].get(URL + "/api/v1/me").raise_for_status()
        if SCHED == "idle":
            subscribers_policy(os.SCHED_IDLE)
        cpu_before, sched_before = cpu_seconds(), nginx_schedstat()
        for n in range(EVENTS):
            agency = AGENCIES[n % len(AGENCIES)]
            sends.append(push(writer[agency], agency))
            time.sleep(1.5)
        cpu = {part: t - cpu_before[part] for part, t in cpu_seconds().items()}
        nginx_ran, nginx_waited = (after - before for after, before in zip(nginx_schedstat(), sched_before))
        pushed_nginx = rss_kb("nginx")
        time.sleep(3)  # the last event's stragglers
        subscribers_policy(os.SCHED_OTHER)  # they read what the pushes left, then end
        done.set()
        results = pending.get(timeout=seconds + 60)
    connected = sum(r[0] for r in results)
    failures = {}
    for r in results:
        for reason, n in r[1].items():
            failures[reason] = failures.get(reason, 0) + n
    failed = sum(failures.values())
    # (read by the subscriber's process, arrived in its socket): the second is when nginx's
    # write reached the subscriber, the first adds the subscribers' own queueing on these cores.
    # Each event goes to the quarter of the streams of its push's agency. It is paired with its
    # push by the report it carries (a subscriber may read it after the next push was sent),
    # a thin one by the push before its arrival; one that does not match is not counted.
    by_report = {report: i for i, (_, _, report) in enumerate(sends)}
    windows, wrong, thin, others = [[] for _ in sends], 0, 0, 0
    for r in results:
        for read, arrived, line in r[2]:
            arrived = arrived if arrived is not None else read
            try:
                event = json.loads(line[5:])
                ids = [c.get("id") for c in event.get("changes", [])]
            except (ValueError, AttributeError):
                event, ids = {}, []
            if str(event.get("partition", "")).startswith("user="):
                others += 1  # the streams' own user partitions (their logins' user documents)
                continue
            i = next((by_report[x] for x in ids if x in by_report), None)
            if i is None and not ids:
                i = max((n for n, (sent, _, _) in enumerate(sends) if sent <= arrived), default=None)
            if i is None or not carries(line, AGENCIES[i % len(AGENCIES)], sends[i][2]):
                wrong += 1  # e.g. the publisher's thin catch-up events from before the pushes
                continue
            thin += not ids
            windows[i].append((read, arrived))
    read_sent, read_answered, socket_sent, socket_answered = [], [], [], []
    # Per push: from the push being sent to the first stream's socket (the write, the
    # publisher, nchan's publish), and from there to the last one (nginx's fan-out).
    first_socket, fan_socket = [], []
    for (sent, answered, _), window in zip(sends, windows):
        read_sent += [(read - sent) * 1000 for read, _ in window]
        read_answered += [max(0.0, read - answered) * 1000 for read, _ in window]
        socket_sent += [(arrived - sent) * 1000 for _, arrived in window]
        socket_answered += [max(0.0, arrived - answered) * 1000 for _, arrived in window]
        if window:
            first, last = min(arrived for _, arrived in window), max(arrived for _, arrived in window)
            first_socket.append((first - sent) * 1000)
            fan_socket.append((last - first) * 1000)
    expected = EVENTS * SUBSCRIBERS // len(AGENCIES)

    print(f"{connected} of {SUBSCRIBERS} streams connected ({failed} failed), spread over 4 agencies + 40 user partitions")
    for reason, n in sorted(failures.items(), key=lambda kv: -kv[1]):
        print(f"  failed: {n} × {reason}")
    print(f"memory (RSS): nginx {base_nginx / 1024:.0f} MB → {held_nginx / 1024:.0f} MB holding them "
          f"({(held_nginx - base_nginx) / max(connected, 1):.1f} KB per stream), {pushed_nginx / 1024:.0f} MB after the pushes; workers {base_workers / 1024:.0f} MB → {held_workers / 1024:.0f} MB")
    print(f"nginx instances: {len(spread)}; their workers' open files holding the streams: {' / '.join(map(str, spread))}")
    print(f"events received: {len(read_sent)} of {expected} expected ({EVENTS} pushes × a quarter of the streams), each "
          f"checked: its push's partition and report ({thin} thin); "
          f"{others} events of the streams' user partitions and {wrong} other data lines, not counted")
    print(f"subscribers over the pushes: {'SCHED_IDLE (a core only when no server process wants it)' if SCHED == 'idle' else 'as any process'}"
          + (f"; in network namespace {NETNS}, connected to {ADDRESS}" if NETNS else "; over loopback"))
    print("commit → event read by the subscriber's process (the subscribers' own queueing on these cores included):")
    print(f"  from the push being sent: p50 {pct(read_sent, .5):.1f} ms, p99 {pct(read_sent, .99):.1f} ms; "
          f"from its answer: p50 {pct(read_answered, .5):.1f} ms, p99 {pct(read_answered, .99):.1f} ms (aim p99 < 50 ms; issue 22: <= 30 ms)")
    print("commit → event in the subscriber's socket (the kernel's receive time: when nginx's write reached it):")
    print(f"  from the push being sent: p50 {pct(socket_sent, .5):.1f} ms, p99 {pct(socket_sent, .99):.1f} ms; "
          f"from its answer: p50 {pct(socket_answered, .5):.1f} ms, p99 {pct(socket_answered, .99):.1f} ms")
    print(f"  per push (median of {len(first_socket)}): the first stream's socket {statistics.median(first_socket or [float('nan')]):.1f} ms "
          f"after the push was sent, the last one {statistics.median(fan_socket or [float('nan')]):.1f} ms after the first (nginx's fan-out)")
    clients = ("subscribers", "clients' kernel")
    server = sum(t for part, t in cpu.items() if part not in clients)
    print(f"CPU over the {EVENTS} pushes ({EVENTS * 1.5:.0f} s): server {server:.2f} s ("
          + ", ".join(f"{part} {t:.2f}" for part, t in cpu.items() if part not in clients)
          + f"); the {PROCESSES} subscriber processes {cpu['subscribers']:.2f} s "
          f"({cpu['subscribers'] / max(server + cpu['subscribers'], 1e-9):.0%} of the two)"
          + (f", their kernel's receive thread {cpu[clients[1]]:.2f} s" if clients[1] in cpu else ""))
    # Each nginx instance writes an event to each of its streams one after another in its one
    # worker process, so this figure times the last stream of a fan-out (2,500 × it on a free
    # core with one instance; about half that on each of two cores with two).
    print(f"nginx CPU per event written to a stream: {cpu['nginx'] / max(len(read_sent), 1) * 1e6:.1f} µs "
          f"({len(read_sent)} written; the streams' keep-alive comments in the window count too)")
    print(f"nginx's workers over the pushes: {nginx_ran / 1e6:.0f} ms on a core, {nginx_waited / 1e6:.0f} ms runnable but "
          f"waiting for one ({nginx_waited / 1e6 / EVENTS:.1f} ms per push; the scheduler's counters)")
    if os.environ.get("EVENTS_LATENCY_ONLY"):
        return

    # The 10,000 streams closed at once: how many of their ends nginx's hooks reported, and
    # when the counts behind presence were right again (tideway events recounts from nginx).
    closed = time.time()

    right_after = None
    while time.time() - closed < 75:
        if open_streams(logins) == 0:
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
        sent, answered, _ = push(writer[agency], agency)
        results = pending.get(timeout=90)
    times = sorted(read for r in results for read, _, _ in r[2] if read >= sent)
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
