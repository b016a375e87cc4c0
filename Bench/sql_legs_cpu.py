"""Server CPU per lone push, SQL variants alternated on one running stack (docs/performance/round-09.md,
"The publisher's read narrowed to the changed collection"): before each leg, one SQL file
of the variant is run as the superuser (e.g. app.tick's notification with and without the
collection); then PUSHES lone ~2.3 KB reports are pushed over HTTPS one after the other, as
Bench/push_profile.py does, and each process's CPU comes from the scheduler's nanosecond
counters (/proc/<pid>/task/*/schedstat): every PostgreSQL process, of which the event
publisher's backends (its listening one, its reading one and the stream-count reconciler's) apart, the publisher
process, the workers, nginx and the job runner. Legs alternate in every round, their order
swapped every other round; prints one line per leg and round, then medians.

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/sql_legs_cpu.py PUSHES ROUNDS NAME=FILE.sql NAME=FILE.sql...

Nothing on the stack is left changed by the script but the SQL last applied: end with the
variant the migrations define (run `tideway migrate` or the stack again to be sure)."""
import os
import re
import statistics
import subprocess
import sys
import time
import uuid

import psycopg2
import requests

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402
from proc_counters import processes, read_pid, threads_ns  # noqa: E402


def backends_of(pid):
    """The PostgreSQL backends connected to process `pid`, by the peers of its unix sockets
    (`ss -xp`): its last statement does not tell a publisher's read from a worker's pull."""
    mine, served = set(), {}
    for line in subprocess.run(["ss", "-xpn"], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split()
        owner = re.search(r'"([^"]+)",pid=(\d+)', line)
        if len(fields) < 8 or not owner:
            continue
        local, peer = fields[-4], fields[-2]
        if int(owner.group(2)) == pid:
            mine.add(peer)
        elif owner.group(1) == "postgres":
            served[local] = int(owner.group(2))
    return sorted(served[i] for i in mine if i in served)


def pids():
    """The processes counted, by part: PostgreSQL's children (backends and background
    processes), of which the event publisher's apart, and the server's other processes."""
    table = processes()
    postmaster = read_pid(os.path.join(wb.STATE, "pg", "postmaster.pid"))

    def own(name):
        return read_pid(os.path.join(wb.RUN_DIR, name))

    def tree(root):
        return [root] + [p for p, (ppid, _, _) in table.items() if ppid == root] if root else []

    publisher = own("events.pid")
    return {"postgres": [p for p, (ppid, _, _) in table.items() if ppid == postmaster] + [postmaster],
            "publisher's backends": backends_of(publisher),
            "publisher": tree(publisher),
            "workers": [p for f in os.listdir(wb.RUN_DIR) if re.fullmatch(r"worker-\d+\.pid", f)
                        for p in tree(own(f))],
            "nginx": tree(own("nginx.pid")),
            "jobs": tree(own("jobs.pid"))}


def snapshot(parts):
    return {part: sum(threads_ns(p) for p in members) for part, members in parts.items()}


def pusher(http, doc, prefix):
    """push(change id): one new report of `doc` in a push of its own, as client `prefix`."""
    def push(cid):
        r = http.post(wb.URL + "/api/v1/sync/push", verify=wb.CA, json={"clientId": prefix, "changes": [
            {"changeId": cid, "collection": "reports", "partition": wb.PARTITION, "id": cid, "op": "insert",
             "doc": {**doc, "_id": cid}}]})
        r.raise_for_status()
        assert r.json()["results"][0]["status"] == "applied", r.text[:300]
    return push


def connections(token):
    """An HTTPS session pushing as `token`'s login, and the superuser's autocommit connection."""
    http = requests.Session()
    http.headers.update({"Authorization": f"Bearer {token}", "Accept-Encoding": "identity"})
    admin = psycopg2.connect(wb.ADMIN)
    admin.autocommit = True
    return http, admin


def leg(http, admin, doc, sql, pushes):
    with admin.cursor() as cur:
        cur.execute(sql)
    prefix = f"legs-{uuid.uuid4().hex[:8]}-"
    push = pusher(http, doc, prefix)

    for i in range(10):  # new function bodies planned, connections warm
        push(f"{prefix}warm-{i}")
    time.sleep(0.5)
    parts = pids()
    before = snapshot(parts)
    for n in range(pushes):
        push(f"{prefix}{n}")
    time.sleep(0.5)  # the last events published
    after = snapshot(parts)
    wb.count_and_remove(prefix)
    wb.wait_folded()
    return {part: (after[part] - before[part]) / pushes / 1e6 for part in parts}


def main():
    pushes, rounds = int(sys.argv[1]), int(sys.argv[2])
    legs = [a.split("=", 1) for a in sys.argv[3:]]
    sqls = {name: open(path).read() for name, path in legs}
    names = [name for name, _ in legs]
    doc = wb.source_doc()
    http, admin = connections(wb.token())
    results = {name: [] for name in names}
    columns = None
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            cpu = leg(http, admin, doc, sqls[name], pushes)
            columns = columns or list(cpu)
            results[name].append(cpu)
            print(f"{time.strftime('%H:%M:%S')} round {r + 1} {name:>8}: ms per push " +
                  ", ".join(f"{k} {v:.3f}" for k, v in cpu.items()), flush=True)
    print("\nmedians, ms of CPU per lone push:")
    for name in names:
        print(f"{name:>8}: " + ", ".join(f"{k} {statistics.median(c[k] for c in results[name]):.3f}"
                                         for k in columns))
    admin.close()


if __name__ == "__main__":
    main()
