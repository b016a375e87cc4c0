"""Round robin against one client connection's requests kept on one worker process
(docs/performance/round-15.md, "One client connection on one worker"): legs alternated on one bench stack that is up
(run it with the variables Bench/22-writes.sh sets), the upstream choice swapped between
legs by editing the rendered nginx configuration and reloading nginx.

Usage: sticky_worker.py A B B A A B   (A: round robin, nginx's default; B: hash $connection)
Each leg: lone pushes on 1 and 4 connections, pushes of 25 on 4 (writes_bench's rows),
32 clients idle-polling (reads_bench's), the write -> event row (100 writes); with the
server CPU per document or poll, its split, and each worker process's share of the
workers' CPU. One line per row and leg; never fails on numbers."""
import glob
import os
import re
import subprocess
import sys
import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench  # noqa: E402
import writes_bench  # noqa: E402
from proc_counters import TICK, stat  # noqa: E402

STATE = os.environ["TIDEWAY_BENCH_STATE"]
HASH = "    hash $connection;"
# STICKY_ROWS=lone1,idle32 measures only those rows in each leg.
ROWS = set(os.environ.get("STICKY_ROWS", "lone1,lone4,batch25,idle32,event").split(","))


def set_mode(mode):
    """A: no balancing line in the upstream block (round robin); B: the hash line."""
    for dir in sorted(glob.glob(os.path.join(STATE, "nginx*"))):
        conf = os.path.join(dir, "tideway.conf")
        text = open(conf).read()
        lines = [l for l in text.split("\n") if not l.strip().startswith("hash ")]
        if mode == "B":
            at = lines.index("upstream tideway_workers {")
            lines.insert(at + 1, HASH)
        open(conf, "w").write("\n".join(lines))
        nginx = ["nginx", "-p", dir + "/", "-c", os.path.join(dir, "nginx.conf"),
                 "-e", os.path.join(STATE, "log", "nginx-error.log")]
        subprocess.run(nginx + ["-t", "-q"], check=True)
        subprocess.run(nginx + ["-s", "reload"], check=True)
    subprocess.run(["sleep", "1.5"])  # the old nginx worker drains


def per_worker():
    return [stat(p)[1] / TICK if stat(p) else 0.0 for p in reads_bench.worker_pids()]


def shares(before, after):
    d = [a - b for a, b in zip(after, before)]
    return "/".join(f"{100 * x / max(sum(d), 1e-9):.0f}" for x in d)


def push_row(mode, name, tok, doc, batch, connections):
    before = per_worker()
    r = writes_bench.tideway_run(tok, doc, batch, connections)
    share = shares(before, per_worker())
    c = r["cpu"]
    per = lambda k: 1000 * c[k] / max(r["docs"], 1)
    total = sum(per(k) for k in ("worker", "postgres", "nginx", "jobs", "events"))
    print(f"{mode} {name:8} {r['rate']:6.0f} docs/s p50 {r['p50']:5.2f} ms | CPU {total:.3f} ms/doc = worker {per('worker'):.3f}"
          f" + pg {per('postgres'):.3f} + nginx {per('nginx'):.3f} + jobs {per('jobs'):.3f} + events {per('events'):.3f}"
          f" | workers' share {share}%{' BAD ' + str(r['bad']) if r['bad'] else ''}", flush=True)


def idle_row(mode, api, cursor):
    body = json.dumps({"partitions": {reads_bench.PARTITION: cursor}, "limit": 100})
    script = reads_bench.idle_poll_script(api.token, body)
    try:
        before = per_worker()
        p = reads_bench.wrk(reads_bench.URL + "/api/v1/sync/pull", script)
        share = shares(before, per_worker())
    finally:
        os.unlink(script)
    w, n, pg = (1000 * x for x in p["parts"])
    print(f"{mode} idle32   {p['rps']:6.0f} polls/s p99 {p['p99']:5.2f} ms | CPU {1000 * p['cpu']:.3f} ms/poll = workers {w:.3f}"
          f" + nginx {n:.3f} + pg {pg:.3f} | workers' share {share}%{' BAD ' + str(p['bad']) if p['bad'] else ''}", flush=True)


def event_row(mode, api, cursor):
    e = reads_bench.bench_event(api, cursor, writes=100)
    print(f"{mode} event    {e['n']}/{e['writes']} p50 {e['p50']:.2f} p99 {e['p99']:.2f} ms; after ack p50 {e['ack_p50']:.2f}"
          f" p99 {e['ack_p99']:.2f}; limit p50 {e['db_p50']:.2f} p99 {e['db_p99']:.2f}", flush=True)


def main():
    tok, doc = writes_bench.token(), writes_bench.source_doc()
    api = reads_bench.Api()
    for mode in sys.argv[1:]:
        assert mode in ("A", "B"), "legs are A (round robin) or B (hash $connection)"
        set_mode(mode)
        out = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"--- leg {mode} {out}", flush=True)
        if "lone1" in ROWS:
            push_row(mode, "lone1", tok, doc, 1, 1)
        if "lone4" in ROWS:
            push_row(mode, "lone4", tok, doc, 1, 4)
        if "batch25" in ROWS:
            push_row(mode, "batch25", tok, doc, 25, 4)
        cursor = reads_bench.current(api, None) if {"idle32", "event"} & ROWS else None
        if "idle32" in ROWS:
            idle_row(mode, api, cursor)
        if "event" in ROWS:
            event_row(mode, api, cursor)
    set_mode("A")


if __name__ == "__main__":
    main()
