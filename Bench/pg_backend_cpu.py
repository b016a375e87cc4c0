"""PostgreSQL's CPU per lone push, process by process (docs/performance/round-15.md,
"A lone push's PostgreSQL CPU, backend by backend"): Tideway's pushes of one ~2.3 KB report
(wrk over HTTPS, as Bench/writes_bench.py's rows) against PostgreSQL alone doing the same
INSERT (pgbench, writes_bench's script) and against the push's own statements run by pgbench
(`sql`), at 1 and at 4 connections, legs alternated.

Each leg runs its load for SECONDS + 3 s; the window counted is SECONDS long, opened 1.5 s in
(connections open, statements prepared): every PostgreSQL process's nanoseconds on a CPU
(/proc/<pid>/schedstat) at both ends, the documents written in it by the partition's clock
(app.tick, one per document on both sides), and what processes that exited inside it used
(the postmaster's cutime + cstime, 10 ms ticks: autovacuum workers, closed pool connections).
Each process is named by who holds the other end of its socket (sql_legs_cpu.backends_of: a
worker, the publisher, the job runner, pgbench) and by what it last ran (a worker's listening connection
runs `listen`; the publisher's roles as Bench/event_cost.py tells them), or by its title
(walwriter, checkpointer...). A leg name ending in `+sub` holds one event stream on the
partition during the leg.

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/pg_backend_cpu.py ROUNDS LEG... (LEG: tideway1, pg1, tideway4, pg4, tideway1+sub,
    pg1@300: pgbench at 300 transactions a second, sql1: a push's own statements in pgbench,
    sqlnoopen1, sqlnolog1: without app.open_first_push, without the push log...)"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import psycopg2

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402
from event_cost import Subscriber, publisher_backends  # noqa: E402
from proc_counters import TICK, processes, read_pid, stat  # noqa: E402
from sql_legs_cpu import backends_of  # noqa: E402

SECONDS = float(os.environ.get("PG_BACKEND_SECONDS", "5"))


def roles(admin):
    """{pid: role} for every child of the postmaster, and the postmaster's pid."""
    postmaster = read_pid(os.path.join(wb.STATE, "pg", "postmaster.pid"))
    children = [p for p, (ppid, _, _) in processes().items() if ppid == postmaster]
    workers = {read_pid(os.path.join(wb.RUN_DIR, f)): f[:-4] for f in os.listdir(wb.RUN_DIR)
               if re.fullmatch(r"worker-\d+\.pid", f)}
    publisher, jobs = read_pid(os.path.join(wb.RUN_DIR, "events.pid")), read_pid(os.path.join(wb.RUN_DIR, "jobs.pid"))
    pgbenches = [int(p) for p in subprocess.run(["pgrep", "-x", "pgbench"], capture_output=True, text=True).stdout.split()]
    owners = {b: (name, owner) for name, ids in (("worker", workers), ("publisher", [publisher]), ("jobs", [jobs]),
                                                 ("pgbench", pgbenches), ("python", [os.getpid()]))
              for owner in ids if owner for b in backends_of(owner)}
    with admin.cursor() as cur:
        cur.execute("select pid, query from pg_stat_activity")
        queries = dict(cur.fetchall())
    theirs = publisher_backends(admin, [p for p, (_, o) in owners.items() if o == publisher])
    publisher_role = {p: f"publisher {r}" for r, ps in theirs.items() for p in ps}
    named = {}
    for pid in children:
        name, owner = owners.get(pid, (None, None))
        if owner in workers:
            named[pid] = "worker listener" if queries.get(pid, "").startswith("listen") else "worker pool"
        elif pid in publisher_role:
            named[pid] = publisher_role[pid]
        elif owner == jobs:
            named[pid] = "job runner"
        elif name == "pgbench":
            named[pid] = "pgbench"
        elif name and name.startswith("python"):
            named[pid] = "bench script"
        else:
            try:
                with open(f"/proc/{pid}/cmdline") as f:
                    title = f.read().replace("\0", " ").strip()
            except OSError:
                title = "?"
            named[pid] = re.sub(r"^postgres: ", "", title).split(" ")[0] if not name else f"other ({name})"
    return named, postmaster


def ns(pid):
    try:
        return wb.run_ns(pid)
    except OSError:
        return None


def push_script(tok, doc, prefix, variant="sql"):
    """A lone push's own statements as the worker sends them in one round trip (WritePath
    applyFirstPush: app.authenticate, app.open_first_push, app.insert_documents unguarded),
    run by pgbench: the writing backend's work without the worker, nginx and their pace.
    `sqlnoopen`: without app.open_first_push; `sqlnolog`: no client id, so no push-log row
    (what each costs, not a push's guarantees)."""
    literal = json.dumps(doc).replace("'", "''")
    ident = f"('{prefix}' || :n::text)"
    return (
        "\\set n random(1, 1000000000)\n"
        "begin;\n"
        f"select * from app.authenticate(sha256(convert_to('{tok}', 'UTF8')), 'access');\n"
        + ("" if variant == "sqlnoopen" else
           f"select app.open_first_push('{prefix}', '', array[{ident}]::text[], array['{wb.PARTITION}']::text[], "
           "array['reports']::text[]);\n")
        + "select result::text from app.insert_documents('reports', "
        + ("null" if variant == "sqlnolog" else f"'{prefix}'") + f", array[{ident}]::text[], "
        f"array[{ident}]::text[], array['{wb.PARTITION}']::text[], "
        f"jsonb_build_array(jsonb_set('{literal}'::jsonb, '{{_id}}', to_jsonb({ident}))), guarded => false) order by ord;\n"
        "commit;\n")


def pgbench(script, connections, rate):
    """writes_bench's pgbench, or at `rate` transactions a second (-R): its backend then sleeps
    between transactions as a Tideway push's does between requests."""
    if rate is None:
        return wb.pgbench(script, connections)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.sql")
        with open(path, "w") as f:
            f.write(script)
        subprocess.run(["pgbench", "-n", "-M", "prepared", "-h", wb.RUN_DIR, "-U", "tideway_worker", f"-c{connections}",
                        f"-j{connections}", f"-T{wb.SECONDS}", "-R", rate, "-f", path, "tideway"],
                       capture_output=True, text=True, check=True, cwd=d)


def clock(admin):
    with admin.cursor() as cur:
        cur.execute("select seq from app.partition_clocks where partition = %s", (wb.PARTITION,))
        return cur.fetchone()[0]


def leg(admin, tok, doc, name):
    side, connections, rate = re.fullmatch(r"(tideway|pg|sql|sqlnoopen|sqlnolog)(\d+)(?:@(\d+))?(?:\+sub)?", name).groups()
    connections = int(connections)
    stream = Subscriber(tok) if name.endswith("+sub") else None
    prefix = f"pgb-{uuid.uuid4().hex[:8]}-"
    total = SECONDS + 3
    if side == "tideway":
        saved = wb.SECONDS
        wb.SECONDS = int(total)
        script = wb.wrk_script(tok, doc, 1, prefix)
        load = threading.Thread(target=wb.wrk, args=(script, connections))
    else:
        saved = wb.SECONDS
        wb.SECONDS = int(total)
        script = wb.pg_script(tok, doc, 1, prefix) if side == "pg" else push_script(tok, doc, prefix, side)
        load = threading.Thread(target=pgbench, args=(script, connections, rate))
    load.start()
    time.sleep(1.5)
    named, postmaster = roles(admin)
    before = {p: ns(p) for p in named}
    exited0, seq0, t0 = stat(postmaster)[2], clock(admin), time.monotonic()
    time.sleep(SECONDS)
    after = {p: ns(p) for p in named}
    exited1, seq1, t1 = stat(postmaster)[2], clock(admin), time.monotonic()
    # Processes born inside the window count whole (a pool's new connection).
    born, _ = roles(admin)
    for p in born.keys() - named.keys():
        named[p], before[p], after[p] = born[p], 0, ns(p)
    load.join()
    wb.SECONDS = saved
    if stream:
        stream.close()
    wb.count_and_remove(prefix)
    with admin.cursor() as cur:
        cur.execute("delete from app.devices where client_id like %s", (prefix + "%",))
    wb.wait_folded()
    wb.vacuum()
    docs = max(seq1 - seq0, 1)
    cpu = {}
    for p, role in named.items():
        if before[p] is not None and after[p] is not None:
            cpu[role] = cpu.get(role, 0) + (after[p] - before[p]) / 1e6 / docs
    cpu["exited"] = (exited1 - exited0) / TICK * 1000 / docs
    if os.environ.get("PG_BACKEND_DETAIL"):
        print("  " + ", ".join(f"{named[p]} {p}: {(after[p] - before[p]) / 1e6 / docs:.3f}" for p in sorted(named, key=named.get)
                               if before[p] is not None and after[p] is not None and after[p] > before[p]))
    counts = {}
    for role in named.values():
        counts[role] = counts.get(role, 0) + 1
    return cpu, docs / (t1 - t0), counts


def main():
    rounds, names = int(sys.argv[1]), sys.argv[2:]
    doc, tok = wb.source_doc(), wb.token()
    admin = psycopg2.connect(wb.ADMIN)
    admin.autocommit = True
    results = {n: [] for n in names}
    counts = {}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            cpu, rate, counts[name] = leg(admin, tok, doc, name)
            results[name].append((cpu, rate))
            load = open("/proc/loadavg").read().split()[0]
            shown = {k: v for k, v in cpu.items() if k != "bench script"}
            print(f"{time.strftime('%H:%M:%S')} load {load} {name:>12}: {rate:.0f}/s; pg total "
                  f"{sum(shown.values()):.3f} ms/push: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(shown.items())),
                  flush=True)
    roles_seen = sorted({k for rs in results.values() for c, _ in rs for k in c} - {"bench script"})
    print("\nmedians, ms of PostgreSQL CPU per lone push (processes of each role in the last leg)")
    print(f"{'role':22}" + "".join(f" | {n:>12}" for n in names))
    for role in roles_seen + ["total"]:
        cells = []
        for n in names:
            values = [sum(v for k, v in c.items() if k != "bench script") if role == "total" else c.get(role, 0)
                      for c, _ in results[n]]
            cells.append(f"{statistics.median(values):.3f}" + (f" ({counts[n].get(role, 0)})" if role != "total" else ""))
        print(f"{role:22}" + "".join(f" | {c:>12}" for c in cells))
    print(f"{'pushes/s':22}" + "".join(f" | {statistics.median(r for _, r in results[n]):>12.0f}" for n in names))


if __name__ == "__main__":
    main()
