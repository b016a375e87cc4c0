"""Do the job runner's summary folds land on the slow events? (docs/performance/round-11.md, "The
summary fold off the event's tail"). Two parts:

  record OUT   reads /proc/<pid>/schedstat of the job runner's PostgreSQL backends every ~1 ms
               until killed; writes one JSON line per burst of their CPU (start and end wall
               times, CPU and run-queue wait in ms): a run of readings in which their CPU
               grew, gaps under 3 ms joined. `report` joins a turn's bursts (the fold and
               the job claim, and the pieces of a fold preempted at SCHED_IDLE).
  report OUT EVENTS
               EVENTS is what Bench/reads_bench.py's event row writes when BENCH_EVENT_LOG
               names a file. Prints how many events overlap a fold (all, the slowest 5%, the
               two slowest: the p99 of 200 is the second slowest), by how much, and the
               events' latencies with and without a fold in their window.

  catchup ROUNDS
               a long fold, as after the runner was down: per round the agency's watermark
               goes back to 0, so the runner's next turn looks at every report of the agency
               again (and, by design, counts none twice), while lone pushes go out every 20 ms
               on a kept-alive connection. Prints the pushes' acknowledgement times inside
               that fold's burst and outside it.

Run with the variables Bench/22-reads.sh sets, against a bench stack that is up."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tail_sampler  # noqa: E402
from event_trace import socket_peers  # noqa: E402

POLL = 0.001
JOIN = 0.003


def runner_backends():
    """The PostgreSQL backends of the job runner (`tideway jobs`, $STATE/run/jobs.pid): the
    other ends of its Unix sockets. One with --fold-priority normal, two otherwise (the fold's
    and the jobs'); between turns their last statement is a COMMIT alike, so both are read."""
    runner = str(tail_sampler.pidfile(os.path.join(tail_sampler.STATE, "run", "jobs.pid")))
    peers = socket_peers()
    return sorted({int(p) for p in peers.get(runner, []) if p != runner})


def record(out_path):
    pids = runner_backends()
    fds = [os.open(f"/proc/{pid}/schedstat", os.O_RDONLY) for pid in pids]
    print(f"job runner's backends {pids}", file=sys.stderr)

    def read():
        run = wait = 0
        for fd in fds:
            r, w, _ = os.pread(fd, 128, 0).split()
            run, wait = run + int(r), wait + int(w)
        return run, wait

    with open(out_path, "a") as out:
        last_run, last_wait = read()
        burst = None  # [start, end, cpu ns, wait ns]
        while True:
            time.sleep(POLL)
            now = time.time()
            run, wait = read()
            if run != last_run:
                if burst and now - burst[1] <= JOIN:
                    burst[1], burst[2], burst[3] = now, burst[2] + run - last_run, burst[3] + wait - last_wait
                else:
                    if burst:
                        out.write(json.dumps(dict(start=burst[0], end=burst[1], cpu=burst[2] / 1e6, wait=burst[3] / 1e6)) + "\n")
                        out.flush()
                    # It began at most one poll before the reading that saw it.
                    burst = [now - POLL, now, run - last_run, wait - last_wait]
            last_run, last_wait = run, wait


def turns_of(bursts):
    """The runner's turns: bursts under 50 ms apart joined (turns are 0.5 s apart; a fold at
    SCHED_IDLE waits on the run queue between its bursts whenever another process wants its
    core), and only those of over 0.3 ms of CPU (a reading of its own clock costs less)."""
    turns = []
    for b in bursts:
        if turns and b["start"] - turns[-1]["end"] < 0.05:
            t = turns[-1]
            t["end"], t["cpu"], t["wait"] = b["end"], t["cpu"] + b["cpu"], t["wait"] + b["wait"]
        else:
            turns.append(dict(b))
    return [t for t in turns if t["cpu"] >= 0.3]


def report(bursts_path, events_path):
    bursts = [json.loads(line) for line in open(bursts_path)]
    events = [json.loads(line) for line in open(events_path)]
    folds = turns_of(bursts)

    def overlap(e):
        lo, hi = e["sent"], e["sent"] + e["event"] / 1000
        return sum(max(0.0, min(hi, b["end"]) - max(lo, b["start"])) for b in folds) * 1000

    def cpu_in(e):
        lo, hi = e["sent"], e["sent"] + e["event"] / 1000
        return sum(b["cpu"] for b in folds if b["end"] > lo and b["start"] < hi)

    ranked = sorted(events, key=lambda e: -e["event"])
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
    span = (events[-1]["sent"] - events[0]["sent"]) if len(events) > 1 else 0
    during = [b for b in folds if events[0]["sent"] <= b["start"] <= events[-1]["sent"] + 0.1]
    print(f"{len(events)} events over {span:.1f} s; {len(during)} fold turns in that time, "
          f"CPU per turn median {med([b['cpu'] for b in during]):.2f} ms (max {max([b['cpu'] for b in during] or [0]):.2f}), "
          f"wall median {med([(b['end'] - b['start']) * 1000 for b in during]):.2f} ms, "
          f"run-queue wait median {med([b['wait'] for b in during]):.2f} ms")
    hit = [e for e in events if overlap(e) > 0]
    miss = [e for e in events if overlap(e) == 0]
    print(f"events overlapping a fold: {len(hit)} of {len(events)}; their latency median "
          f"{med([e['event'] for e in hit]):.1f} ms against {med([e['event'] for e in miss]):.1f} ms for the rest")
    for label, group in (("2 slowest", ranked[:2]), ("slowest 5%", ranked[:max(1, len(ranked) // 20)])):
        h = [e for e in group if overlap(e) > 0]
        print(f"{label}: {len(h)} of {len(group)} overlap a fold"
              + (f" (by {', '.join(f'{overlap(e):.1f}' for e in h)} ms; the fold's CPU {', '.join(f'{cpu_in(e):.1f}' for e in h)} ms)" if h else "")
              + f"; latencies {', '.join('%.1f' % e['event'] for e in group)} ms")


def catchup(rounds):
    import threading
    import uuid
    import reads_bench as rb
    writer = rb.Api()
    bursts_path = f"/tmp/fold_overlap_catchup_{os.getpid()}.jsonl"
    recorder = threading.Thread(target=record, args=(bursts_path,), daemon=True)
    recorder.start()
    writes = []  # (sent wall time, ms)
    created = []
    for _ in range(rounds):
        time.sleep(1.0)
        rb.admin_sql("update app.summary_watermarks set seq = 0 where partition = %s", (rb.PARTITION,))
        until = time.time() + 1.5
        while time.time() < until:
            rid = f"bench-fold-{uuid.uuid4().hex[:16]}"
            created.append(rid)
            change = {"changeId": rid, "collection": "reports", "partition": rb.PARTITION, "id": rid, "op": "insert",
                      "doc": {"_id": rid, "timestamp": "2026-11-21T10:00:00Z"}}
            sent, t0 = time.time(), time.perf_counter()
            writer.post("/api/v1/sync/push", {"clientId": "fold-overlap", "changes": [change]})
            writes.append((sent, (time.perf_counter() - t0) * 1000))
            time.sleep(0.02)
    time.sleep(1.0)
    rb.admin_sql("delete from sync.reports where id = any(%s)", (created,))
    bursts = [json.loads(line) for line in open(bursts_path)]
    os.unlink(bursts_path)
    # The catch-up folds: the turns over 30 ms (an ordinary one: 1-5 ms).
    long = [t for t in turns_of(bursts) if t["end"] - t["start"] > 0.03]
    inside = [ms for sent, ms in writes if any(b["start"] < sent + ms / 1000 and sent < b["end"] for b in long)]
    outside = [ms for sent, ms in writes if not any(b["start"] < sent + ms / 1000 and sent < b["end"] for b in long)]
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float("nan")
    print(f"{len(long)} catch-up folds: wall {', '.join('%.0f' % ((b['end'] - b['start']) * 1000) for b in long)} ms, "
          f"CPU {', '.join('%.0f' % b['cpu'] for b in long)} ms, run-queue wait {', '.join('%.0f' % b['wait'] for b in long)} ms")
    print(f"pushes acknowledged inside a catch-up fold: {len(inside)}, median {med(inside):.2f} ms, max {max(inside or [0]):.2f}; "
          f"outside: {len(outside)}, median {med(outside):.2f} ms, max {max(outside or [0]):.2f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        record(sys.argv[2])
    elif sys.argv[1:2] == ["report"]:
        report(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["catchup"]:
        catchup(int(sys.argv[2]))
    else:
        sys.exit(__doc__)
