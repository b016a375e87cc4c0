"""Backend CPU per report of a push's write statement alone (docs/performance/round-04.md, pushes of
25): `app.insert_documents` called as the worker role under an officer's claims
(app.authenticate, so the same RLS and triggers as a push), one push per committed
transaction, CPU from the backend's own /proc counters. No HTTP, no worker: for comparing
one SQL effect on and off, or two versions of it, back to back. WAL bytes per report from
pg_current_wal_lsn() around the measured pushes (other sessions' writes meanwhile count too).

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/batch_insert_cpu.py [pushes] [reports per push] [--perf FILE]

`--perf FILE` records the backend with `perf record -g` during the measured pushes."""
import json
import os
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    perf_file = sys.argv[sys.argv.index("--perf") + 1] if "--perf" in sys.argv else None
    if perf_file in args:
        args.remove(perf_file)
    pushes = int(args[0]) if len(args) > 0 else 80
    batch = int(args[1]) if len(args) > 1 else 25
    tok, doc = wb.token(), wb.source_doc()
    conn, pid, cpu = wb.worker_backend()
    cur = conn.cursor()
    prefix = f"bic-{uuid.uuid4().hex[:8]}-"

    def push(n):
        cur.execute("select count(*) from app.authenticate(sha256(convert_to(%s, 'UTF8')), 'access')", (tok,))
        ids = [f"{prefix}{n}-{k}" for k in range(batch)]
        cur.execute("select count(*) from app.insert_documents('reports', %s, %s, %s, %s, %s::jsonb)",
                    (prefix, ids, ids, [wb.PARTITION] * batch, json.dumps([{**doc, "_id": i} for i in ids])))
        conn.commit()

    try:
        for n in range(10):  # the session's plans
            push(f"warm{n}")
        perf = None
        if perf_file:
            perf = subprocess.Popen(["perf", "record", "-g", "-o", perf_file, "-p", str(pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        cur.execute("select pg_current_wal_lsn()")
        lsn = cur.fetchone()[0]
        conn.commit()
        before = cpu()
        for n in range(pushes):
            push(n)
        used = cpu() - before
        cur.execute("select pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,))
        wal = float(cur.fetchone()[0])
        conn.commit()
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        print(f"{1000 * used / (pushes * batch):.3f} ms of backend CPU per report ({pushes} pushes of {batch}); "
              f"{wal / (pushes * batch):,.0f} bytes of WAL per report (every session's)")
    finally:
        wb.count_and_remove(prefix)


if __name__ == "__main__":
    main()
