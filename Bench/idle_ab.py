"""Idle polls, two worker binaries alternated on one bench stack (issue 22, idle polls;
docs/performance/round-20.md): legs A B B A ..., each leg both workers on one binary
(restarted through the wrapper of Bench/worker_side_by_side.py), then `reads_bench.py`'s idle
measure: 3 s of polls to warm up, then ROUNDS × 5 s of `wrk` (32 connections, one token, the
cursor at the partition's end), CPU per poll of the workers, nginx and PostgreSQL from their
own counters, and context switches per poll of the workers and nginx (every thread's
/proc/<pid>/task/*/status, voluntary and not). Prints one line per leg (time UTC, load) and
the medians per binary. Never fails on numbers.

    python3 Bench/worker_side_by_side.py prepare BINARY_A
    STATE=$PWD/.state/bench HTTPS_PORT=... HTTP_PORT=... TIDEWAY_BIN_DIR=$PWD/.state/bins/stack Deploy/dev/stack.sh up
    TIDEWAY_BENCH_URL=https://localhost:PORT TIDEWAY_BENCH_CA=.state/bench/tls/ca.crt \\
    TIDEWAY_BENCH_STATE=.state/bench BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/idle_ab.py LEGS BINARY_A BINARY_B"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench as rb  # noqa: E402
from worker_side_by_side import place  # noqa: E402


def switches(pids):
    """Context switches so far of every thread of `pids` (0 for one gone)."""
    total = 0
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/status") as f:
                    total += sum(int(line.split()[1]) for line in f if "ctxt_switches:" in line)
            except (OSError, ValueError):
                pass
    return total


def nginx_workers():
    return [c for m in rb.nginx_pids() for c in rb._children(m)]


def leg(script):
    rb.wrk(rb.URL + "/api/v1/sync/pull", script, seconds=3)  # warm-up
    runs = []
    for _ in range(rb.ROUNDS):
        workers, nginx = rb.worker_pids(), nginx_workers()
        before = switches(workers), switches(nginx)
        result = rb.wrk(rb.URL + "/api/v1/sync/pull", script)
        done = result["rps"] * 5
        result["switches"] = tuple((switches(p) - b) / max(done, 1) for p, b in zip((workers, nginx), before))
        runs.append(result)
    med = lambda key, i=None: statistics.median(r[key] if i is None else r[key][i] for r in runs)
    return dict(cpu=med("cpu"), parts=tuple(med("parts", i) for i in range(3)), rps=med("rps"), p99=med("p99"),
                bad=sum(r["bad"] for r in runs), switches=(med("switches", 0), med("switches", 1)))


def main():
    legs, a, b = int(sys.argv[1]), os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    order = [(a, b, b, a)[i % 4] for i in range(legs)]
    api = rb.Api()
    cursor = rb.current(api, None)
    body = json.dumps({"partitions": {rb.PARTITION: cursor}, "limit": 100})
    script = rb.idle_poll_script(api.token, body)
    results = {a: [], b: []}
    try:
        for binary in order:
            place((binary, binary))
            r = leg(script)
            parts = " / ".join(f"{p * 1000:.3f}" for p in r["parts"])
            r["line"] = (f"{time.strftime('%H:%M:%S', time.gmtime())} load {os.getloadavg()[0]:.2f} "
                         f"{'A' if binary == a else 'B'}: {r['cpu'] * 1000:.3f} ms ({parts}) "
                         f"switches/poll workers {r['switches'][0]:.2f} nginx {r['switches'][1]:.2f} "
                         f"{r['rps']:.0f}/s p99 {r['p99']:.1f} ms bad {r['bad']}")
            print(r["line"], flush=True)
            results[binary].append(r)
    finally:
        os.unlink(script)
    for name, binary in (("A", a), ("B", b)):
        rs = results[binary]
        if not rs:
            continue
        def med(key, i=None):
            return statistics.median(r[key] if i is None else r[key][i] for r in rs)
        parts = " / ".join(f"{med('parts', i) * 1000:.3f}" for i in range(3))
        print(f"{name} {binary}: median {med('cpu') * 1000:.3f} ms ({parts}), switches/poll workers "
              f"{med('switches', 0):.2f} nginx {med('switches', 1):.2f}, p99 {med('p99'):.1f} ms, {len(rs)} legs")


if __name__ == "__main__":
    main()
