"""Backend CPU per full pull (docs/performance/round-10.md, "The report's row, tenth round"): one
partition's whole snapshot as PullRoute sends it (Bench/pull_sql.py: app.authenticate, the
clocks, every change rendered), as `tideway_worker`, each database of the same cluster on its
own connection, the databases alternating pull by pull (the order reversed every pull); a
round's figure is its median pull, CPU from the backend's scheduler counter. For comparing
copies of one database (`createdb -T`) that differ in how they store the same rows; prints
each answer's size and MD5 so that a difference in the answer shows.

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    [BENCH_TOKEN=<an access token present in every copy>] \\
    python3 Bench/pull_cpu.py PULLS ROUNDS DATABASE...

The partition is the bench officer's (writes_bench.PARTITION)."""
import hashlib
import sys

import psycopg2

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import pull_sql  # noqa: E402
import writes_bench as wb  # noqa: E402


def main():
    pulls, rounds, databases = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    statements = pull_sql.pull_sql(wb.token(), wb.PARTITION).strip().split("\n")
    backends = {}
    for db in databases:
        conn = psycopg2.connect(f"host={wb.RUN_DIR} dbname={db} user=tideway_worker")
        conn.autocommit = True  # the script has its own BEGIN and COMMIT
        cur = conn.cursor()
        cur.execute("select pg_backend_pid()")
        backends[db] = (cur, cur.fetchone()[0])

    def pull(db):
        cur, pid = backends[db]
        before, answer = wb.run_ns(pid), None
        for statement in statements:
            cur.execute(statement)
            if statement.startswith("select seq"):
                answer = [row[-1] for row in cur.fetchall()]
            elif cur.description:
                cur.fetchall()
        return wb.run_ns(pid) - before, answer

    for db in databases:  # the session's plans and caches
        for _ in range(3):
            pull(db)
    runs = {db: [] for db in databases}
    answers = {}
    for _ in range(rounds):
        per_pull = {db: [] for db in databases}
        for j in range(pulls):
            for db in (databases if j % 2 == 0 else databases[::-1]):
                ns, answers[db] = pull(db)
                per_pull[db].append(ns)
        for db in databases:
            ordered = sorted(per_pull[db])
            runs[db].append(ordered[len(ordered) // 2] / 1e6)
    for db in databases:
        ordered = sorted(runs[db])
        text = "\n".join(answers[db]).encode()
        print(f"{db:16s} median {ordered[len(ordered) // 2]:.1f} ms of backend CPU per full pull; rounds "
              f"{', '.join(f'{x:.1f}' for x in runs[db])}; {len(answers[db])} changes, {len(text)} bytes, "
              f"MD5 {hashlib.md5(text).hexdigest()}")


if __name__ == "__main__":
    main()
