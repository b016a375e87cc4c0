"""What ran while the write -> event row's slowest events were in flight (docs/performance/round-10.md,
"The event tail in the full bench"). Two parts, nothing on by default:

  record OUT   samples every ~10 ms, until killed, into OUT (JSON lines): PostgreSQL's
               non-idle sessions (backend type, state, wait event, query start), VACUUM
               progress, the checkpointer and WAL counters, and the CPU and run-queue wait
               (/proc/<pid>/schedstat) of every PostgreSQL process by its title, the
               publisher, the job runner, the workers and nginx. Waits for the bench stack
               (it may come up after the sampler starts) and reconnects across its restarts.
  report OUT EVENTS
               EVENTS is what Bench/reads_bench.py's event row writes when BENCH_EVENT_LOG
               names a file (each write's wall time sent and latencies). Prints, for the
               events over 8 ms and for the rest, what the samples in their windows held.

Run with the variables Bench/22-reads.sh sets, e.g. around `make bench` (the stack's state is
.state/bench; the sampler waits for it to come up)."""
import collections
import json
import os
import re
import sys
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench as rb  # noqa: E402
from event_trace import socket_peers  # noqa: E402

STATE, ADMIN = rb.STATE, rb.ADMIN
pidfile = rb._pidfile
PERIOD = 0.010

QUERY = """select
  (select coalesce(json_agg(json_build_array(pid, backend_type, state, wait_event_type, wait_event,
                                              left(query, 50), extract(epoch from query_start))), '[]')
     from pg_stat_activity where pid <> pg_backend_pid()
      and (state is distinct from 'idle' or backend_type <> 'client backend')
      and backend_type not in ('walwriter', 'background writer', 'checkpointer', 'logical replication launcher',
                               'autovacuum launcher', 'archiver')),
  (select coalesce(json_agg(json_build_array(pid, relid::regclass::text, phase, heap_blks_scanned, heap_blks_total)), '[]')
     from pg_stat_progress_vacuum),
  (select json_build_array(checkpoints_timed + checkpoints_req, buffers_checkpoint, buffers_clean, buffers_backend,
                           buffers_backend_fsync) from pg_stat_bgwriter),
  (select json_build_array(wal_records, wal_bytes, wal_write, wal_sync) from pg_stat_wal)"""


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except OSError:
        return []


def title(pid):
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            t = f.read().replace("\0", " ").strip()
    except OSError:
        return None
    # postgres: <kind or user db [local] COMMAND> -- keep the kind or the user
    if t.startswith("postgres: "):
        t = t[len("postgres: "):]
        for kind in ("autovacuum worker", "autovacuum launcher", "walwriter", "checkpointer", "background writer",
                     "logical replication launcher", "stats collector"):
            if t.startswith(kind):
                return kind
        return "backend " + t.split()[0]
    return t.split()[0].rsplit("/", 1)[-1] if t else None


def processes():
    """{pid: name}: PostgreSQL's processes by title, the publisher, the job runner, workers, nginx."""
    run = os.path.join(STATE, "run")
    out = {}
    postmaster = pidfile(os.path.join(STATE, "pg", "postmaster.pid"))
    if postmaster:
        for pid in children(postmaster):
            out[pid] = title(pid)
    for name, file in (("publisher", "events.pid"), ("jobs", "jobs.pid")):
        pid = pidfile(os.path.join(run, file))
        if pid:
            out[pid] = name
    for f in sorted(os.listdir(run)) if os.path.isdir(run) else []:
        pid = pidfile(os.path.join(run, f)) if re.fullmatch(r"(worker-\d+|nginx(-\d+)?)\.pid", f) else None
        if pid and f.startswith("worker"):
            out[pid] = "worker"
        elif pid:
            for p in [pid] + children(pid):
                out[p] = "nginx"
    # A backend by its client (the other end of its Unix socket): the publisher's, the job runner's...
    peers = socket_peers()
    for pid, name in list(out.items()):
        if name and name.startswith("backend "):
            client = next((out.get(p) for p in peers.get(pid, []) if p != pid and p in out), None)
            if client:
                out[pid] = f"{name} of {client}"
    return out


def schedstat(pid):
    """CPU and run-queue wait in ns, summed over the process's threads."""
    run = wait = 0
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            r, w, _ = open(f"/proc/{pid}/task/{t}/schedstat").read().split()
            run, wait = run + int(r), wait + int(w)
    except (OSError, ValueError):
        return None
    return run, wait


def record(out_path):
    conn, procs, procs_at = None, {}, 0
    with open(out_path, "a") as out:
        while True:
            started = time.time()
            if conn is None:
                try:
                    conn = psycopg2.connect(ADMIN, connect_timeout=1)
                    conn.autocommit = True
                    conn.cursor().execute("set application_name = 'tail_sampler'")
                except psycopg2.Error:
                    conn = None
                    time.sleep(0.5)
                    continue
            try:
                with conn.cursor() as cur:
                    cur.execute(QUERY)
                    activity, vacuum, bgwriter, wal = cur.fetchone()
            except psycopg2.Error:
                conn = None
                continue
            if started - procs_at > 2:
                procs, procs_at = processes(), started
            cpu = {}
            for pid, name in procs.items():
                s = schedstat(pid)
                if s:
                    cpu[pid] = (name, s[0], s[1])
            out.write(json.dumps(dict(t=started, a=[r for r in activity if r[5] is None or "tail_sampler" not in r[5]],
                                      v=vacuum, b=bgwriter, w=wal, c=cpu)) + "\n")
            time.sleep(max(0.0, PERIOD - (time.time() - started)))


def report(samples_path, events_path):
    samples = []
    with open(samples_path) as f:
        for line in f:
            try:
                samples.append(json.loads(line))
            except ValueError:
                pass
    events = [json.loads(line) for line in open(events_path)]
    times = [s["t"] for s in samples]
    import bisect

    def window(e):
        """Samples from the one before the write was sent to the one after its event arrived."""
        lo = max(0, bisect.bisect_left(times, e["sent"]) - 1)
        hi = min(len(samples) - 1, bisect.bisect_right(times, e["sent"] + e["event"] / 1000))
        return samples[lo:hi + 1]

    def cpu_by_name(ws):
        """{name: (CPU ms, run-queue wait ms)} between the window's first and last sample."""
        if len(ws) < 2:
            return {}
        a, b = ws[0]["c"], ws[-1]["c"]
        out = collections.defaultdict(lambda: [0.0, 0.0])
        for pid, (name, run, wait) in b.items():
            r0, w0 = (a[pid][1], a[pid][2]) if pid in a else (0, 0)
            out[name][0] += (run - r0) / 1e6
            out[name][1] += (wait - w0) / 1e6
        return out

    def seen(ws):
        """What the window's samples held: sessions by (type, state/wait, query), vacuums, checkpoints."""
        held = set()
        for s in ws:
            for pid, kind, state, wtype, wevent, query, _ in s["a"]:
                if kind == "client backend" and state == "idle":
                    continue
                held.add(f"{kind}: {state or ''} {wtype or ''}/{wevent or ''} {(query or '')[:40]}".strip())
            for pid, rel, phase, *_ in s["v"]:
                held.add(f"vacuum {rel} {phase}")
        if len(ws) >= 2 and ws[-1]["b"][0] != ws[0]["b"][0]:
            held.add("checkpoint ended")
        if len(ws) >= 2 and ws[-1]["b"][1] != ws[0]["b"][1]:
            held.add("checkpointer wrote buffers")
        return held

    slow = [e for e in events if e["event"] > 8]
    fast = [e for e in events if e["event"] <= 8]
    print(f"{len(events)} events, {len(slow)} over 8 ms; {len(samples)} samples, "
          f"median gap {sorted(b - a for a, b in zip(times, times[1:]))[len(times) // 2] * 1000:.1f} ms")
    for name, group in (("slow", slow), ("rest", fast)):
        counts = collections.Counter()
        cpu = collections.defaultdict(lambda: [0.0, 0.0])
        for e in group:
            ws = window(e)
            counts.update(seen(ws))
            for k, (r, w) in cpu_by_name(ws).items():
                cpu[k][0] += r
                cpu[k][1] += w
        n = max(1, len(group))
        print(f"\n{name}: {len(group)} events; what their windows held (share of events):")
        for k, c in counts.most_common(25):
            print(f"  {c / n:5.0%}  {k}")
        print(f"  CPU ms (run-queue wait ms) per event by process:")
        for k, (r, w) in sorted(cpu.items(), key=lambda kv: -kv[1][0])[:14]:
            print(f"    {k:34} {r / n:6.2f} ({w / n:5.2f})")
    print("\nthe slow events, one by one:")
    for e in sorted(slow, key=lambda e: e["sent"]):
        ws = window(e)
        c = cpu_by_name(ws)
        top = ", ".join(f"{k} {r:.1f}/{w:.1f}" for k, (r, w) in sorted(c.items(), key=lambda kv: -kv[1][0])[:6] if r >= 0.2)
        print(f"  {time.strftime('%H:%M:%S', time.gmtime(e['sent']))}.{int(e['sent'] * 1000) % 1000:03d} event {e['event']:.1f} "
              f"ack {e['ack']:.1f} | {top}")
        for k in sorted(seen(ws)):
            print(f"      {k}")


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2])
    else:
        report(sys.argv[2], sys.argv[3])
