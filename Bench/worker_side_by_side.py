"""The FastCGI workers' CPU per push, two worker binaries side by side (issue 22,
docs/performance/round-13.md, "The worker's CPU per push, thirteenth round"): the bench stack's two
workers each run the binary named in `$STATE/../bins/slot-N` (the stack started with
TIDEWAY_BIN_DIR pointing at a wrapper that execs it), nginx alternates requests between them,
so that both binaries see the same machine at the same moments. Each window is `wrk` pushes
of BATCH ~2.3 KB reports on 4 connections; a worker's CPU comes from its threads' scheduler
counters (/proc/<pid>/task/*/schedstat, ns) and its pushes from its own request log. After
every ROUNDS/2 windows the binaries swap slots (the workers restart; the first pushes after a
restart are not counted), so that neither slot favours one.

    python3 Bench/worker_side_by_side.py prepare BINARY   # .state/bins/stack: the wrapper
    STATE=$PWD/.state/bench HTTPS_PORT=... HTTP_PORT=... TIDEWAY_BIN_DIR=$PWD/.state/bins/stack Deploy/dev/stack.sh up
    TIDEWAY_BENCH_URL=https://localhost:PORT TIDEWAY_BENCH_CA=.state/bench/tls/ca.crt \\
    TIDEWAY_BENCH_STATE=.state/bench BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/worker_side_by_side.py BATCH SECONDS ROUNDS BINARY_A BINARY_B

Prints per window µs of worker CPU per push (and per document) for A and B, then medians and
the median of the paired differences.

    python3 Bench/worker_side_by_side.py whole LEGS BINARY_A BINARY_B

instead runs both workers on one binary per leg, A B B A A B ..., and each leg the write rows
of Bench/writes_bench.py (1 and 25 per push, 4 connections, `writes_bench.tideway_run`):
the whole server's CPU per document, split by process. Never fails on numbers."""
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402
from proc_counters import read_pid, threads_ns  # noqa: E402

BINS = os.path.join(os.path.dirname(wb.STATE.rstrip("/")), "bins")
LOGS = os.path.join(wb.STATE, "log")


def worker_pid(slot):
    return read_pid(os.path.join(wb.RUN_DIR, f"worker-{slot}.pid"))


def pushes_logged(slot):
    with open(os.path.join(LOGS, f"worker-{slot}.log"), "rb") as f:
        return sum(1 for line in f if b'"route":"/api/v1/sync/push","status":200' in line)


def place(slots):
    """Runs binary slots[0] in worker 1 and slots[1] in worker 2, restarting what changes."""
    for slot, binary in enumerate(slots, start=1):
        path = os.path.join(BINS, f"slot-{slot}")
        with open(path) as f:
            if f.read().strip() == binary and worker_pid(slot):
                continue
        with open(path, "w") as f:
            f.write(binary + "\n")
        old = worker_pid(slot)
        os.kill(old, 15)
        while worker_pid(slot) in (None, old) or not os.path.exists(os.path.join(wb.RUN_DIR, f"worker-{slot}.sock")):
            time.sleep(0.1)
    time.sleep(1)


def window(script, seconds):
    pids = {slot: worker_pid(slot) for slot in (1, 2)}
    before = {slot: (threads_ns(pid), pushes_logged(slot)) for slot, pid in pids.items()}
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        subprocess.run(["wrk", "-t4", "-c4", f"-d{seconds}s", "-s", f.name, wb.URL + "/api/v1/sync/push"],
                       capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    time.sleep(0.3)  # the last answers' log lines
    after = {slot: (threads_ns(pid), pushes_logged(slot)) for slot, pid in pids.items()}
    return {slot: ((after[slot][0] - before[slot][0]) / 1000, after[slot][1] - before[slot][1]) for slot in (1, 2)}


def whole(legs, a, b):
    tok, doc = wb.token(), wb.source_doc()
    figures = {"A": {1: [], 25: []}, "B": {1: [], 25: []}}
    for leg in range(legs):
        label = "ABBA"[leg % 4]
        binary = a if label == "A" else b
        place((binary, binary))
        wb.tideway_run(tok, doc, 1, wb.CLIENTS)  # fresh workers: pools, plans
        for batch in (1, 25):
            run = wb.tideway_run(tok, doc, batch, wb.CLIENTS)
            split = {k: 1000 * v / max(run["docs"], 1) for k, v in run["cpu"].items()}
            figures[label][batch].append(split)
            load = open("/proc/loadavg").read().split()[0]
            print(f"{time.strftime('%H:%M:%S', time.gmtime())} load {load} {label} {batch:2} per push: "
                  f"{sum(split.values()):.3f} ms/doc = " + " + ".join(f"{k} {v:.3f}" for k, v in split.items())
                  + f" ({run['docs']} docs, {run['bad']} non-2xx)", flush=True)
    for label in "AB":
        for batch in (1, 25):
            rows = figures[label][batch]
            if not rows:
                continue
            med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
            print(f"median {label} {batch:2} per push: {statistics.median(sum(r.values()) for r in rows):.3f} ms/doc; "
                  + " + ".join(f"{k} {v:.3f}" for k, v in med.items()))


WRAPPER = """#!/bin/bash
# Worker N runs the binary named in ../slot-N (Bench/worker_side_by_side.py).
n=$(basename "$TIDEWAY_SOCKET" .sock)
exec "$(cat "$(dirname "$0")/../slot-${n#worker-}")" "$@"
"""


def prepare(binary):
    """The stack's bin directory: a `tideway-worker` that execs its slot's binary (both slots
    `binary` to begin with), and `tideway` (jobs, events) beside `binary`, the same for every leg."""
    stack = os.path.join(BINS, "stack")
    os.makedirs(stack, exist_ok=True)
    with open(os.path.join(stack, "tideway-worker"), "w") as f:
        f.write(WRAPPER)
    os.chmod(os.path.join(stack, "tideway-worker"), 0o755)
    link = os.path.join(stack, "tideway")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.join(os.path.dirname(binary), "tideway"), link)
    for slot in (1, 2):
        with open(os.path.join(BINS, f"slot-{slot}"), "w") as f:
            f.write(binary + "\n")


def main():
    if sys.argv[1] == "prepare":
        prepare(os.path.abspath(sys.argv[2]))
        return
    if sys.argv[1] == "whole":
        whole(int(sys.argv[2]), os.path.abspath(sys.argv[3]), os.path.abspath(sys.argv[4]))
        return
    batch, seconds, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    a, b = os.path.abspath(sys.argv[4]), os.path.abspath(sys.argv[5])
    tok, doc = wb.token(), wb.source_doc()
    per_push = {"A": [], "B": []}
    pairs = []
    for round_ in range(rounds):
        swapped = round_ >= (rounds + 1) // 2
        labels = ("B", "A") if swapped else ("A", "B")  # worker 1's, worker 2's
        place((b, a) if swapped else (a, b))
        prefix = f"sbs-{uuid.uuid4().hex[:8]}-"
        if round_ in (0, (rounds + 1) // 2):
            window(wb.wrk_script(tok, doc, batch, prefix + "warm"), 2)  # fresh workers: pools, plans
        figures = window(wb.wrk_script(tok, doc, batch, prefix), seconds)
        wb.count_and_remove(prefix)
        wb.vacuum()
        row, count = {}, {}
        for slot, label in enumerate(labels, start=1):
            us, pushes = figures[slot]
            row[label], count[label] = us / max(pushes, 1), pushes
            per_push[label].append(row[label])
        pairs.append(row["B"] - row["A"])
        load = open("/proc/loadavg").read().split()[0]
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} load {load} worker-1={labels[0]} "
              + "  ".join(f"{x} {row[x]:7.1f} µs/push ({row[x] / batch:6.1f}/doc, {count[x]} pushes)" for x in "AB")
              + f"  B-A {row['B'] - row['A']:+7.1f}", flush=True)
    med_a, med_b = statistics.median(per_push["A"]), statistics.median(per_push["B"])
    print(f"medians: A {med_a:.1f} µs/push ({med_a / batch:.1f}/doc), B {med_b:.1f} ({med_b / batch:.1f}/doc); "
          f"paired B-A median {statistics.median(pairs):+.1f} µs/push, B lower in {sum(p < 0 for p in pairs)} of {len(pairs)}")

if __name__ == "__main__":
    main()
