"""Where the slowest writes of the write -> event row spend their time (docs/performance/round-06.md,
"The write's tail"). The row of Bench/reads_bench.py (a lone push, the subscriber's event, its
pull, 20 ms apart), each write traced from outside the server, so nothing is on by default:

- the client's times: push sent -> acknowledged -> event in the subscriber's socket;
- each server process's run-queue wait and CPU over the write (/proc/<pid>/task/*/schedstat:
  time runnable but not running; the client's own too), workers / nginx / PostgreSQL;
- with --pglog, each statement's duration in PostgreSQL (log_min_duration_statement = 0 and
  autovacuum logged, set with ALTER SYSTEM for the run and reset after), matched to the
  write whose window holds its log time: the COMMIT's duration is the WAL flush;
- checkpoints and WAL (pg_stat_bgwriter, pg_stat_wal) over the run;
- each PostgreSQL process's CPU over the write, named by its role: the writer's and the pulls'
  backends (a worker's pool), each process's LISTENing backend (the workers' ChangeHubs, the
  publisher's, the stream-count reconciler's, the job runner's), the publisher's reader,
  autovacuum, the WAL writer, the checkpointer... (a backend's client process from `ss -xp`,
  which connection of it from its last statement in pg_stat_activity). With --pglog each
  statement is named by its backend's role too.

--fresh: each write is a new login's first push (signed in before the clock starts), so the
login's presence touch is due at every write, as for a device that syncs less often than every
15 s per worker process (the bench row's one writer is due about once per run).

Run against a bench stack that is up, with the variables Bench/22-reads.sh sets:
  python3 Bench/event_trace.py [writes] [--pglog] [--fresh]"""
import os
import re
import sys
import time
import uuid
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench as rb  # noqa: E402

WRITES = int(next((a for a in sys.argv[1:] if a.isdigit()), "200"))
PGLOG = "--pglog" in sys.argv
FRESH = "--fresh" in sys.argv
LOG = os.path.join(rb.STATE, "log", "postgres.log")


def tasks(pid):
    try:
        return [f"/proc/{pid}/task/{t}/schedstat" for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def groups():
    postmaster = rb._pidfile(os.path.join(rb.STATE, "pg", "postmaster.pid"))
    others = [rb._pidfile(os.path.join(rb.RUN_DIR, f)) for f in ("events.pid", "jobs.pid")]
    return {"worker": rb.worker_pids(), "nginx": [p for m in rb.nginx_pids() for p in [m] + rb._children(m)],
            "pg": [postmaster] + rb._children(postmaster), "publisher/jobs": [p for p in others if p],
            "client": [str(os.getpid())]}


def pg_pids(postmaster):
    """The postmaster's children now (backends come and go: autovacuum workers, new connections)."""
    try:
        with open(f"/proc/{postmaster}/task/{postmaster}/children") as f:
            return f.read().split()
    except OSError:
        return rb._children(postmaster)


def socket_peers():
    """{pid: [pids at the other end of its Unix stream sockets]}, from `ss -xp`."""
    import subprocess
    owner, peer_of = {}, {}
    for line in subprocess.run(["ss", "-xpnH"], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) < 9 or f[0] != "u_str":
            continue
        # Netid State Recv-Q Send-Q Local-Address Port Peer-Address Port users:(...)
        local, peer = f[5], f[7]
        pids = re.findall(r"pid=(\d+)", line)
        owner[local] = pids
        peer_of[local] = peer
    out = {}
    for local, pids in owner.items():
        for pid in pids:
            out.setdefault(pid, []).extend(owner.get(peer_of[local], []))
    return out


# A connection of the publisher process, told apart by the statements it runs.
PUBLISHER_LISTENER = re.compile(r"listen tideway_(changes|revoked)|events_checkpoint|stream_revocations|revoked_stream_channels|events_to_catch_up")
RECONCILER = re.compile(r"tideway_streams_check|event_streams_to_check|reconcile_event_streams")


def roles(postmaster, writer_pids):
    """{PostgreSQL pid: role}: background processes by their type, backends by their client
    process and, within it, by the last statement they ran."""
    activity = {str(r[0]): (r[1], r[2] or "") for r in
                rb.admin_sql("select pid, backend_type, query from pg_stat_activity")}
    peers = socket_peers()
    events = rb._pidfile(os.path.join(rb.RUN_DIR, "events.pid"))
    jobs = rb._pidfile(os.path.join(rb.RUN_DIR, "jobs.pid"))
    out = {postmaster: "postmaster"}
    for pid in pg_pids(postmaster):
        kind, query = activity.get(pid, ("", ""))
        client = next((p for p in peers.get(pid, []) if p != pid), None)
        if kind and kind != "client backend":
            out[pid] = kind
        elif not kind:
            out[pid] = label_of_title(pid)
        elif client == events:
            out[pid] = ("publisher listener" if PUBLISHER_LISTENER.search(query)
                        else "reconciler" if RECONCILER.search(query) else "publisher reader")
        elif client == jobs:
            out[pid] = "jobs"
        elif client in writer_pids:
            out[pid] = "worker listener" if query.startswith("listen") else "worker pool"
        elif client == str(os.getpid()):
            out[pid] = "bench"
        else:
            out[pid] = "other backend"
    return out


def label_of_title(pid):
    """A process that came after the roles were read: its title (`postgres: autovacuum worker`)."""
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            title = f.read().replace("\0", " ").strip()
    except OSError:
        return "gone"
    m = re.match(r"postgres: (autovacuum worker|autovacuum launcher|walwriter|checkpointer|background writer)", title)
    return m.group(1) if m else "new backend"


def per_pid(pids):
    """{pid: (cpu ns, run-queue wait ns, times scheduled in)} of PostgreSQL's processes (one
    thread each): the last counts its wake-ups."""
    out = {}
    for pid in pids:
        try:
            r, w, n = open(f"/proc/{pid}/schedstat").read().split()
            out[pid] = (int(r), int(w), int(n))
        except (OSError, ValueError):
            pass
    return out


def by_pid(p0, p1):
    """{pid: (cpu ms, wait ms, wake-ups)} between two per_pid readings; a process born
    between them counts whole (named when the run ends: `roles` again, or its title)."""
    out = {}
    for pid, (r, w, n) in p1.items():
        r0, w0, n0 = p0.get(pid, (0, 0, 0))
        if r > r0 or n > n0:
            out[pid] = ((r - r0) / 1e6, (w - w0) / 1e6, n - n0)
    return out


def by_role(pids, role):
    out = {}
    for pid, (r, w, n) in pids.items():
        acc = out.setdefault(role.get(pid) or label_of_title(pid), [0.0, 0.0, 0])
        acc[0] += r
        acc[1] += w
        acc[2] += n
    return out


def sched(procs):
    """{group: (cpu ns, run-queue wait ns)} summed over every thread."""
    out = {}
    for name, pids in procs.items():
        run = wait = 0
        for pid in pids:
            for path in tasks(pid):
                try:
                    r, w, _ = open(path).read().split()
                    run, wait = run + int(r), wait + int(w)
                except (OSError, ValueError):
                    pass
        out[name] = (run, wait)
    return out


def stats():
    return rb.admin_sql("select checkpoints_timed + checkpoints_req, buffers_checkpoint, buffers_backend, "
                        "(select wal_bytes from pg_stat_wal), (select wal_fpi from pg_stat_wal), "
                        "(select wal_records from pg_stat_wal), "
                        "(select coalesce(sum(autovacuum_count + autoanalyze_count), 0) from pg_stat_all_tables) "
                        "from pg_stat_bgwriter")[0]


def pglog(on):
    conn = rb.psycopg2.connect(rb.ADMIN)
    conn.autocommit = True  # ALTER SYSTEM refuses a transaction block
    with conn.cursor() as cur:
        for setting, value in (("log_min_duration_statement", "0"), ("log_autovacuum_min_duration", "0")):
            cur.execute(f"alter system {'set' if on else 'reset'} {setting}" + (f" = {value}" if on else ""))
        cur.execute("select pg_reload_conf()")
    conn.close()
    time.sleep(0.5)


LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \w+ \[(\d+)\] (\S*) (LOG|WARNING|ERROR):\s+(.*)")


def read_log(offset):
    """[(epoch s, pid, user, message)] of the log written since offset."""
    out = []
    with open(LOG, errors="replace") as f:
        f.seek(offset)
        for line in f:
            m = LINE.match(line)
            if m:
                at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
                out.append((at, m.group(2), m.group(3), m.group(5)))
    return out


def main():
    api = rb.Api()
    sub, writer = rb.subscribed(api)
    cursor = rb.current(api, None)
    procs = groups()
    postmaster = procs["pg"][0]
    role = roles(postmaster, rb.worker_pids())
    offset = os.path.getsize(LOG)
    if PGLOG:
        pglog(True)
    before = stats()
    writes, created = [], []
    try:
        for _ in range(WRITES):
            rid = f"bench-ev-{uuid.uuid4().hex[:16]}"
            created.append(rid)
            if FRESH:
                writer = rb.Api()
                time.sleep(0.02)
            s0, p0 = sched(procs), per_pid(pg_pids(postmaster))
            wall, start = time.time(), time.perf_counter()
            sent, acked, received = rb.lone_write_and_event(writer, sub, rid)
            arrived = received[0] if received else float("nan")
            s1, p1 = sched(procs), per_pid(set(p0) | set(pg_pids(postmaster)))
            writes.append(dict(wall=wall + (sent - start), end=wall + (time.perf_counter() - start), ack=(acked - sent) * 1000,
                               event=(arrived - sent) * 1000,
                               sched={g: ((s1[g][0] - s0[g][0]) / 1e6, (s1[g][1] - s0[g][1]) / 1e6) for g in s0},
                               pids=by_pid(p0, p1)))
            cursor = rb.current(api, cursor)
            time.sleep(0.02)
    finally:
        after = stats()
        if PGLOG:
            pglog(False)
        sub.stop = True
        rb.admin_sql("delete from sync.reports where id = any(%s)", (created,))
    log = read_log(offset)
    # Backends that connected during the run (the publisher's reader connects at its first read).
    role = {**roles(postmaster, rb.worker_pids()), **role}
    for w in writes:
        w["roles"] = by_role(w["pids"], role)
    for w in writes:
        # Log times are milliseconds, written as a statement ends: the write's window, 1 ms either side.
        w["pg"] = [(m, u) for at, pid, u, m in log if w["wall"] - 0.001 <= at <= w["end"] + 0.001]
        w["pgall"] = [(role.get(pid, pid), m) for at, pid, u, m in log if w["wall"] - 0.001 <= at <= w["end"] + 0.001]
    events = sorted(w["event"] for w in writes)
    print(f"{len(writes)} writes: write -> event p50 {rb.pct(events, .5):.2f} ms, p99 {rb.pct(events, .99):.2f} ms; "
          f"acknowledged p50 {rb.pct([w['ack'] for w in writes], .5):.2f}, p99 {rb.pct([w['ack'] for w in writes], .99):.2f}")
    d = [a - b for a, b in zip(after, before)]
    print(f"over the run: {d[0]} checkpoints, {d[1]} buffers written by the checkpointer, {d[2]} by backends; "
          f"WAL {d[3] / len(writes):.0f} bytes, {d[4] / len(writes):.2f} full-page images, {d[5] / len(writes):.1f} records "
          f"per write (the subscriber's pulls included); {d[6]} autovacuum/analyze runs")
    for at, pid, u, m in log:
        if re.match(r"(checkpoint|automatic (vacuum|analyze))", m):
            print(f"  {datetime.fromtimestamp(at).strftime('%H:%M:%S.%f')[:-3]} [{pid}] {m[:150]}")

    def commit(w):
        return sum(float(re.match(r"duration: ([\d.]+) ms", m).group(1)) for m, u in w["pg"]
                   if u.startswith("tideway_worker") and re.match(r"duration: [\d.]+ ms\s+execute [^:]*: (commit|COMMIT)", m))

    def statements(w):
        return sum(float(re.match(r"duration: ([\d.]+) ms", m).group(1)) for m, u in w["pg"]
                   if u.startswith("tideway_worker") and m.startswith("duration:"))
    def presence(w):
        return any("touch_presence" in m for m, u in w["pg"])
    if PGLOG:
        touched = sorted(w["event"] for w in writes if presence(w))
        print(f"writes that also touched presence (a second transaction): {len(touched)}, write -> event "
              + ", ".join(f"{t:.2f}" for t in touched) + " ms; rank among the slowest: "
              + ", ".join(str(1 + sorted(writes, key=lambda w: -w["event"]).index(w)) for w in writes if presence(w)))
        # Another process's COMMIT in the write's window (the job runner's fold, the
        # publisher's checkpoint): a durable one queues the write's WAL flush behind its own.
        def others_commit(w):
            return [(who, float(re.match(r"duration: ([\d.]+)", m).group(1))) for who, m in w["pgall"]
                    if who not in ("worker pool", "bench") and re.match(r"duration: [\d.]+ ms\s+(execute [^:]*|statement): (commit|COMMIT|select app.events_checkpoint)", m)]
        shared = [w for w in writes if others_commit(w)]
        alone = sorted(w["event"] for w in writes if not others_commit(w))
        print(f"writes with another process's COMMIT in their window: {len(shared)} ("
              + ", ".join(f"{w['event']:.1f} ms: " + "+".join(f"{who} {d:.2f}" for who, d in others_commit(w)) for w in shared)
              + f"); the others' write -> event p50 {rb.pct(alone, .5):.2f}, p99 {rb.pct(alone, .99):.2f} ms")
        commits = [commit(w) for w in writes]
        print(f"COMMIT (the WAL flush) p50 {rb.pct(commits, .5):.2f} ms, p99 {rb.pct(commits, .99):.2f} ms; "
              f"the writes' statements before it p50 {rb.pct([statements(w) - c for w, c in zip(writes, commits)], .5):.2f} ms")
    waits = {g: [w["sched"][g][1] for w in writes] for g in writes[0]["sched"]}
    print("run-queue wait per write, p50 / p99 (ms): " + ", ".join(f"{g} {rb.pct(v, .5):.2f} / {rb.pct(v, .99):.2f}" for g, v in waits.items()))
    slow = sorted(writes, key=lambda w: -w["event"])
    print("\nslowest writes (ms): event, ack | run-queue wait worker / nginx / pg / publisher+jobs / client | CPU worker / nginx / pg"
          + (" | PostgreSQL statements of the window: all, COMMIT" if PGLOG else ""))
    for w in slow[:max(6, len(writes) // 25)] + [None] + slow[len(slow) // 2:len(slow) // 2 + 3]:
        if w is None:
            print("  ... and the median writes:")
            continue
        s = w["sched"]
        line = (f"  {datetime.fromtimestamp(w['wall']).strftime('%H:%M:%S.%f')[:-3]} {w['event']:6.2f} {w['ack']:6.2f} | "
                f"{s['worker'][1]:5.2f} / {s['nginx'][1]:5.2f} / {s['pg'][1]:5.2f} / {s['publisher/jobs'][1]:5.2f} / {s['client'][1]:5.2f} | "
                f"{s['worker'][0]:5.2f} / {s['nginx'][0]:5.2f} / {s['pg'][0]:5.2f}")
        if PGLOG:
            line += f" | {statements(w):6.2f}, {commit(w):6.2f}" + (" presence" if presence(w) else "")
        print(line)
        r = w["roles"]
        print("      PostgreSQL CPU ms (wait ms, wake-ups) by role: " + ", ".join(
            f"{k} {v[0]:.2f} ({v[1]:.2f}, {v[2]})" for k, v in sorted(r.items(), key=lambda kv: -kv[1][0]) if v[0] >= 0.05))
        if PGLOG and w in slow[:max(6, len(writes) // 25)]:
            for who, m in w["pgall"]:
                if not m.startswith("duration:") or float(re.match(r"duration: ([\d.]+)", m).group(1)) >= 0.3:
                    print(f"      [{who}] {m[:140]}")
    # Per role over the run: which processes run in every write, and which only in the slow ones.
    names = sorted({k for w in writes for k in w["roles"]})
    top = slow[:max(6, len(writes) // 25)]
    print(f"\nPostgreSQL per role, CPU ms per write: p50 / mean / mean over the {len(top)} slowest | "
          f"wake-ups per write: mean / over the slowest | writes in which it ran >= 0.5 ms: all, of the slowest")
    for k in sorted(names, key=lambda k: -sum(w["roles"].get(k, (0, 0, 0))[0] for w in writes)):
        c = [w["roles"].get(k, (0, 0, 0))[0] for w in writes]
        ct = [w["roles"].get(k, (0, 0, 0))[0] for w in top]
        n = [w["roles"].get(k, (0, 0, 0))[2] for w in writes]
        nt = [w["roles"].get(k, (0, 0, 0))[2] for w in top]
        print(f"  {k:20} {rb.pct(c, .5):5.2f} / {sum(c) / len(c):5.2f} / {sum(ct) / len(ct):5.2f} | "
              f"{sum(n) / len(n):5.2f} / {sum(nt) / len(nt):5.2f} | {sum(x >= 0.5 for x in c)}, {sum(x >= 0.5 for x in ct)}")


if __name__ == "__main__":
    main()
