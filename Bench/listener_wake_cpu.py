"""What a LISTENing connection costs PostgreSQL per notifying commit of another connection
(docs/performance/round-10.md, "The report's row, tenth round"): N extra connections LISTEN on a
channel, Bench/lone_push_cpu.py pushes lone reports (each commit notifies
`tideway_changes`), and each listener's backend CPU over the run is divided by the pushes.
PostgreSQL 15 signals every listener of the database at each notifying commit, whatever its
channels, so a channel nobody notifies measures the wake alone.

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/listener_wake_cpu.py PUSHES LISTENERS CHANNEL [DATABASE]

LISTENERS may be 0: then only the pushing backend's figure is printed (what signalling the
listeners costs the committing side shows in it as LISTENERS grows)."""
import os
import subprocess
import sys

import psycopg2

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402

WARM_PUSHES = 10  # lone_push_cpu.py's pushes before the measured ones


def main():
    pushes, count, channel = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    db = sys.argv[4] if len(sys.argv) > 4 else os.environ.get("BENCH_DBNAME", "tideway")
    listeners = []
    for _ in range(count):
        conn = psycopg2.connect(f"{wb.ADMIN} dbname={db}")
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("select pg_backend_pid()")
        pid = cur.fetchone()[0]
        cur.execute(f"listen {psycopg2.extensions.quote_ident(channel, cur)}")
        listeners.append((conn, pid))
    before = [wb.run_ns(pid) for _, pid in listeners]
    run = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "lone_push_cpu.py"), "--prepared",
                          str(pushes), "1", f"unguarded+open@{db}"], capture_output=True, text=True, check=True)
    after = [wb.run_ns(pid) for _, pid in listeners]
    for conn, _ in listeners:
        conn.poll()
    print(run.stdout.strip().splitlines()[-1])
    if not listeners:  # the pushing backend's figure alone, for the notifier's side
        return
    print(f"{count} listeners on {channel}: µs of backend CPU per push, each: "
          + ", ".join(f"{(a - b) / (pushes + WARM_PUSHES) / 1000:.1f}" for a, b in zip(after, before))
          + f"; notifications delivered to each: {len(listeners[0][0].notifies)}")


if __name__ == "__main__":
    main()
