"""The first lone pushes after the stack starts, one by one (docs/performance/round-10.md, "The event
tail in the full bench"): for each of the first N writes of the write -> event row's step
(Bench/reads_bench.py's lone_write_and_event, a subscriber on the partition), the latencies
and the CPU of the PostgreSQL backends that served it, by client (the workers' pools, the
publisher's), from /proc/<pid>/schedstat read before the push and after its event (the
subscriber does not pull here, so nothing else runs on the workers' backends meanwhile).
Run against a bench stack that is up, with the variables Bench/22-reads.sh sets:
  python3 Bench/cold_pushes.py [writes] [--pull]"""
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench as rb  # noqa: E402
import tail_sampler as ts  # noqa: E402

WRITES = int(next((a for a in sys.argv[1:] if a.isdigit()), "40"))
# --pull: the subscriber pulls after each event, as the bench row's does (outside the window).
PULL = "--pull" in sys.argv


def cpu(procs):
    out = {}
    for pid, name in procs.items():
        s = ts.schedstat(pid)
        if s:
            out[pid] = (name, s[0])
    return out


def main():
    api = rb.Api()
    sub, writer = rb.subscribed(api)
    cursor = rb.current(api, None) if PULL else None
    created = []
    rows = []
    try:
        for n in range(WRITES):
            procs = ts.processes()
            rid = f"bench-ev-{uuid.uuid4().hex[:16]}"
            created.append(rid)
            before = cpu(procs)
            sent, acked, received = rb.lone_write_and_event(writer, sub, rid)
            after = cpu({**procs, **ts.processes()})
            by = {}
            served = set()
            for pid, (name, ns) in after.items():
                d = (ns - before.get(pid, (name, 0))[1]) / 1e6
                if d > 0.01 and name:
                    by[name] = by.get(name, 0) + d
                    if name.endswith("of worker") and d > 0.3:
                        served.add(pid)
            rows.append((n, ((received[0] if received else float("nan")) - sent) * 1000, (acked - sent) * 1000, by, served))
            if PULL:
                cursor = rb.current(api, cursor)
            time.sleep(0.05)
    finally:
        sub.stop = True
        rb.admin_sql("delete from sync.reports where id = any(%s)", (created,))
    seen = set()
    for n, event, ack, by, served in rows:
        new = served - seen
        seen |= served
        print(f"{n:3} event {event:6.2f} ack {ack:6.2f} | workers' backends {by.get('backend tideway_worker of worker', 0):5.2f} "
              f"publisher's {by.get('backend tideway_worker of publisher', 0):5.2f} worker {by.get('worker', 0):5.2f} "
              f"nginx {by.get('nginx', 0):5.2f} publisher {by.get('publisher', 0):5.2f} ms CPU"
              + (f" | first push on backend {', '.join(sorted(new))}" if new else ""))


if __name__ == "__main__":
    main()
