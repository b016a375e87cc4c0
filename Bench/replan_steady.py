"""The write path under a steady load long enough for autovacuum's passes to come on their
own (once a minute, autovacuum_naptime), and what the pushes right after each pass pay
(docs/performance/round-18.md, "The write path's plans made again after autovacuum").
A pass (VACUUM or ANALYZE) of a table that changes its page or row count in pg_class makes
every connection plan again, at its next call, each cached plan that reads the table.

Two kinds of writer, through nginx like a device:
  - background writers: lone reports pushed at --rate a second in all (--writers threads,
    each its own kept-alive connection), so that sync.reports (20,000 rows on the bench
    stack) passes autovacuum's thresholds every minute or two, as a small server under a
    steady load would;
  - the write -> event row's step (Bench/reads_bench.py: a lone push, the subscriber's event,
    --gap-ms apart).
Then, from PostgreSQL's log (log_autovacuum_min_duration = 0 for the run, by ALTER SYSTEM),
each pass of the write path's tables, and the pushes sent in the --after s after each pass
set beside the rest: p50, p99, max. Every write is deleted at the end.

Run against a bench stack that is up, with the variables Bench/22-reads.sh sets:
  python3 Bench/replan_steady.py [--seconds 150] [--rate 50] [--writers 2] [--gap-ms 20] [--after 1]"""
import argparse
import os
import re
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench as rb  # noqa: E402

# The tables a lone report's push writes or reads, whose passes invalidate its plans.
WRITE_PATH = ("sync.reports", "app.push_log", "app.report_history", "app.devices", "app.partition_clocks",
              "app.boarding_contributions", "app.summary_watermarks")
PASS = re.compile(r"^(\S+ \S+) UTC \[\d+\] LOG:  automatic (vacuum|analyze) of table \"tideway\.([^\"]+)\"")


def background(rate, stop, out, created):
    """Lone reports at `rate` a second on one kept-alive connection: (sent wall time, ms)."""
    api = rb.Api()
    gap = 1 / rate
    change = lambda rid: {"changeId": rid, "collection": "reports", "partition": rb.PARTITION, "id": rid,
                          "op": "insert", "doc": {"_id": rid, "timestamp": "2026-11-21T10:00:00Z"}}
    following = time.time()
    while not stop.is_set():
        rid = f"bench-rp-{uuid.uuid4().hex[:16]}"
        created.append(rid)
        sent = time.time()
        api.post("/api/v1/sync/push", {"clientId": f"replan-bg-{threading.get_ident()}", "changes": [change(rid)]})
        out.append((sent, (time.time() - sent) * 1000))
        following += gap
        time.sleep(max(0.0, following - time.time()))


def split(samples, passes, after):
    """(ms of the samples sent within `after` s of a pass's end, ms of the rest)."""
    near, rest = [], []
    for sent, ms in samples:
        (near if any(0 <= sent - p < after for p in passes) else rest).append(ms)
    return near, rest


def line(name, values):
    if not values:
        return f"  {name:34} none"
    return (f"  {name:34} {len(values):5d}  p50 {rb.pct(values, .5):6.2f}  p99 {rb.pct(values, .99):7.2f}  "
            f"max {max(values):7.2f} ms")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--rate", type=float, default=50, help="background pushes a second, all writers together")
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--gap-ms", type=float, default=20)
    parser.add_argument("--after", type=float, default=1.0, help="a push this many s after a pass counts as after it")
    parser.add_argument("--label", default="")
    args = parser.parse_args()

    log = os.path.join(rb.STATE, "log", "postgres.log")
    log_from = os.path.getsize(log)
    began, load = time.time(), os.getloadavg()[0]
    stop, bg, created = threading.Event(), [], []
    threads = [threading.Thread(target=background, args=(args.rate / args.writers, stop, bg, created), daemon=True)
               for _ in range(args.writers)]
    for t in threads:
        t.start()
    api = rb.Api()
    sub, writer = rb.subscribed(api)
    wall = time.time() - time.perf_counter()
    events, acks = [], []
    while time.time() - began < args.seconds:
        rid = f"bench-rp-{uuid.uuid4().hex[:16]}"
        created.append(rid)
        sent, acked, received = rb.lone_write_and_event(writer, sub, rid)
        if received:
            events.append((wall + sent, (received[0] - sent) * 1000))
        acks.append((wall + sent, (acked - sent) * 1000))
        time.sleep(args.gap_ms / 1000)
    stop.set()
    for t in threads:
        t.join()
    sub.stop = True
    ended = time.time()
    rb.admin_sql("delete from sync.reports where id = any(%s)", (created,))
    rb.admin_sql("delete from app.push_log where change_id = any(%s)", (created,))
    rb.admin_sql("delete from app.devices where client_id like 'replan-bg-%%'")

    passes = []
    with open(log, errors="replace") as f:
        f.seek(log_from)
        for text in f:
            m = PASS.match(text)
            if m and m.group(3) in WRITE_PATH:
                at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()
                if began <= at <= ended:
                    passes.append((at, m.group(2), m.group(3)))
    hms = lambda t: datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S")
    print(f"{args.label + ': ' if args.label else ''}{hms(began)}–{hms(ended)} UTC, load {load:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end; {len(bg)} background pushes ({args.writers} writers, {args.rate:g}/s), "
          f"{len(events)} events of {len(acks)} writes {args.gap_ms:g} ms apart")
    print(f"autovacuum's passes of the write path's tables: {len(passes)}")
    for at, kind, table in passes:
        print(f"  {hms(at)}  {kind:8} {table}")
    for name, group in (("sync.reports or app.push_log", ("sync.reports", "app.push_log")),
                        ("any of them", WRITE_PATH)):
        ends = [at for at, _, table in passes if table in group]
        print(f"within {args.after:g} s after a pass of {name} ({len(ends)} passes), and the rest:")
        near, rest = split(events, ends, args.after)
        print(line("write -> event, after", near))
        print(line("write -> event, the rest", rest))
        near, rest = split(bg, ends, args.after)
        print(line("background push, after", near))
        print(line("background push, the rest", rest))
    print(line("write -> event, all", [ms for _, ms in events]))
    print(line("background push, all", [ms for _, ms in bg]))


if __name__ == "__main__":
    main()
