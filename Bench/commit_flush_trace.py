"""How much of each write -> event is PostgreSQL's WAL flush (docs/performance/round-15.md,
"The write's own tail, fifteenth round"). Since a push's COMMIT rides its one-trip pipeline
(no COMMIT statement), `log_min_duration_statement` no longer shows the flush; this reads it
from the kernel instead: `perf trace -T` records every fdatasync/fsync of the bench cluster's
PostgreSQL processes (the writing backend flushes its own commit; the WAL writer and the
checkpointer theirs) while the event row's step (Bench/reads_bench.py: a lone push, the
subscriber's event, 20 ms apart) runs. perf's timestamps are CLOCK_MONOTONIC, as
time.perf_counter's, so each flush falls in the window of the write it belongs to.

Prints the flushes' p50/p90/p99/max, then the slowest events with the flush time in their
window: what is left of each is everything else (the run queue, the statements, the way in
and out). The duration of a flush includes the wait for a core after the disk has answered.

Run as root against a bench stack that is up, with the variables Bench/22-reads.sh sets:
  python3 Bench/commit_flush_trace.py [writes]"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench as rb  # noqa: E402

WRITES = int(next((a for a in sys.argv[1:] if a.isdigit()), "200"))
LINE = re.compile(r"^\s*([\d.]+) \(\s*([\d.]+) ms\): postgres/(\d+) f(?:data)?sync\(")


def main():
    postmaster = rb._pidfile(os.path.join(rb.STATE, "pg", "postmaster.pid"))
    pids = ",".join([postmaster] + rb._children(postmaster))
    api = rb.Api()
    sub, writer = rb.subscribed(api)
    out = tempfile.NamedTemporaryFile(suffix=".perf-trace", delete=False).name
    perf = subprocess.Popen(["perf", "trace", "-T", "-e", "fdatasync,fsync", "-p", pids, "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # perf attaches
    events, created = [], []
    for _ in range(WRITES):
        rid = f"bench-ft-{uuid.uuid4().hex[:16]}"
        created.append(rid)
        sent, acked, received = rb.lone_write_and_event(writer, sub, rid)
        if received:
            events.append((sent * 1000, (received[0] - sent) * 1000, (acked - sent) * 1000))
        time.sleep(0.02)
    perf.send_signal(signal.SIGINT)
    perf.wait(timeout=30)
    sub.stop = True
    rb.admin_sql("delete from sync.reports where id = any(%s)", (created,))
    with open(out) as f:
        flushes = [(float(m.group(1)), float(m.group(2))) for m in map(LINE.match, f) if m]
    os.unlink(out)

    durations = [d for _, d in flushes]
    latencies = [e[1] for e in events]
    print(f"{len(events)} of {WRITES} events; write -> event p50 {rb.pct(latencies, .5):.2f}, "
          f"p99 {rb.pct(latencies, .99):.2f} ms; load {os.getloadavg()[0]:.2f} at the end")
    if not flushes:
        print("no flush traced (perf trace needs root)")
        return
    print(f"{len(flushes)} flushes by PostgreSQL: p50 {rb.pct(durations, .5):.2f}, p90 {rb.pct(durations, .9):.2f}, "
          f"p99 {rb.pct(durations, .99):.2f}, max {max(durations):.2f} ms")
    rows = []
    for start, latency, ack in events:
        inside = [d for t, d in flushes if start <= t <= start + latency]
        rows.append((latency, ack, sum(inside), len(inside)))
    rows.sort(reverse=True)
    slow = rows[:max(1, len(rows) // 50)]
    print(f"the slowest 2% ({len(slow)}): event {sum(r[0] for r in slow) / len(slow):.2f} ms on average, "
          f"of which flushes {sum(r[2] for r in slow) / len(slow):.2f}")
    print("the 10 slowest: event, acknowledged, flushes in the window (count), ms")
    for latency, ack, flushed, count in rows[:10]:
        print(f"  {latency:7.2f} {ack:7.2f} {flushed:7.2f} ({count})")


if __name__ == "__main__":
    main()
