"""Backend CPU per report in pushes of 25, SQL variants alternated on one running stack
(docs/performance/round-21.md): before each leg one SQL file of the variant is run
as the superuser (e.g. an index dropped, or created again), then Bench/batch_insert_cpu.py
measures the push's own statement (`app.insert_documents` as the worker role under an
officer's claims, one push per transaction, CPU from the backend's /proc counters). Legs
alternate in every round, their order swapped every other round (A B, B A, ...); prints one
line per leg and round with the load average, then each variant's median.

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/batch_insert_legs.py PUSHES ROUNDS NAME=FILE.sql NAME=FILE.sql...

As Bench/sql_legs_cpu.py (its lone-push twin), the stack keeps the SQL last applied: end
with the variant the migrations define."""
import os
import re
import statistics
import subprocess
import sys
import time

import psycopg2


def main():
    pushes, rounds = sys.argv[1], int(sys.argv[2])
    legs = [a.split("=", 1) for a in sys.argv[3:]]
    sqls = {name: open(path).read() for name, path in legs}
    names = [name for name, _ in legs]
    admin = psycopg2.connect(os.environ["BENCH_ADMIN_DATABASE"])
    admin.autocommit = True
    here = os.path.dirname(os.path.abspath(__file__))
    results = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            with admin.cursor() as cur:
                cur.execute(sqls[name])
            out = subprocess.run([sys.executable, os.path.join(here, "batch_insert_cpu.py"), pushes, "25"],
                                 capture_output=True, text=True, check=True).stdout
            ms = float(re.search(r"([\d.]+) ms of backend CPU per report", out).group(1))
            results[name].append(ms)
            load = open("/proc/loadavg").read().split()[0]
            print(f"{time.strftime('%H:%M:%S')} round {r + 1} {name:>8}: {ms:.3f} ms per report (load {load})",
                  flush=True)
    print("\nmedians, ms of backend CPU per report in pushes of 25:")
    for name in names:
        print(f"{name:>8}: {statistics.median(results[name]):.3f} ({len(results[name])} legs)")
    admin.close()


if __name__ == "__main__":
    main()
