"""The write -> event row's step (Bench/reads_bench.py: a lone push, the subscriber's event,
20 ms apart) made for a stretch of time instead of 200 writes, each event placed by its time
since the stack started, to see whether a slow one comes at a fixed moment after a start
(docs/performance/round-15.md, "The write's own tail, fifteenth round"; earlier rounds
saw one ~52 s after it).

Prints, per 5 s since the postmaster started: writes, event p50 and max; then every event over
--slow ms with its time since the start, and the PostgreSQL log lines (autovacuum, checkpoints,
slow statements) written in the run. BENCH_EVENT_LOG=<file> also writes each event as the
event row does, for Bench/tail_sampler.py's report.

Run against a bench stack that is up, with the variables Bench/22-reads.sh sets:
  python3 Bench/event_timeline.py [--seconds 90] [--slow 15] [--gap-ms 20]"""
import argparse
import json
import os
import sys
import time
import uuid
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench as rb  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--slow", type=float, default=15, help="events slower than this are listed (ms)")
    parser.add_argument("--gap-ms", type=float, default=20)
    args = parser.parse_args()

    started = rb.admin_sql("select extract(epoch from pg_postmaster_start_time())")[0][0]
    started = float(started)
    log = os.path.join(rb.STATE, "log", "postgres.log")
    log_from = os.path.getsize(log)
    api = rb.Api()
    sub, writer = rb.subscribed(api)
    trace = open(os.environ["BENCH_EVENT_LOG"], "a") if os.environ.get("BENCH_EVENT_LOG") else None
    wall = time.time() - time.perf_counter()
    events, created = [], []
    end = time.time() + args.seconds
    while time.time() < end:
        rid = f"bench-tl-{uuid.uuid4().hex[:16]}"
        created.append(rid)
        sent, acked, received = rb.lone_write_and_event(writer, sub, rid)
        latency = (received[0] - sent) * 1000 if received else float("inf")
        events.append((wall + sent - started, latency, (acked - sent) * 1000))
        if trace and received:
            trace.write(json.dumps(dict(sent=wall + sent, event=latency, ack=(acked - sent) * 1000)) + "\n")
        time.sleep(args.gap_ms / 1000)
    sub.stop = True
    if trace:
        trace.close()
    rb.admin_sql("delete from sync.reports where id = any(%s)", (created,))

    print(f"{len(events)} lone writes, {args.gap_ms:g} ms apart, from {events[0][0]:.1f} s to {events[-1][0]:.1f} s "
          f"after the postmaster's start ({datetime.fromtimestamp(started, timezone.utc):%H:%M:%S} UTC); "
          f"load {os.getloadavg()[0]:.2f} at the end")
    print("since start (s)  writes  event p50  max (ms)")
    buckets = {}
    for at, latency, _ in events:
        buckets.setdefault(int(at // 5) * 5, []).append(latency)
    for at in sorted(buckets):
        values = buckets[at]
        print(f"  {at:4d}-{at + 5:<4d}     {len(values):5d}  {rb.pct(values, .5):9.2f}  {max(values):7.2f}")
    all_latencies = [e[1] for e in events]
    print(f"all: p50 {rb.pct(all_latencies, .5):.2f}, p99 {rb.pct(all_latencies, .99):.2f}, max {max(all_latencies):.2f} ms")
    print(f"events over {args.slow:g} ms (s since start: event, acknowledged):")
    for at, latency, ack in events:
        if latency > args.slow:
            print(f"  {at:7.2f}  {latency:7.2f}  {ack:7.2f}")
    with open(log, errors="replace") as f:
        f.seek(log_from)
        lines = [line.rstrip() for line in f if "automatic" in line or "checkpoint" in line or "duration" in line]
    print(f"PostgreSQL's log in the run ({len(lines)} lines on autovacuum, checkpoints, durations):")
    for line in lines[:40]:
        print("  " + line[:160])


if __name__ == "__main__":
    main()
