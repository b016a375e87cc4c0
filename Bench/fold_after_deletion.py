"""The summary fold after a mass deletion (docs/performance/round-12.md, "The summary fold after a mass
deletion"): how long each fold turn takes, and how much of its backend's CPU, from the
deletion until the summaries are exact again.

    fold_after_deletion.py [AGENCIES [REPORTS_EACH [DELETED_EACH]]]     (4, 5000, 2000)
    fold_after_deletion.py idle SECONDS

`idle`: the stack's job runner left alone with nothing to do; prints the CPU its PostgreSQL
backend and its own process spent over SECONDS, per turn (a turn every 0.5 s plus its time).

Against a stack that is up (STATE, the stack's state folder; the admin database is
$STATE/run's socket): makes AGENCIES agencies of REPORTS_EACH boarding reports (every other
agency's all copies of one boarding, as the write bench makes them), folds them, then twice deletes DELETED_EACH reports of each agency — once in one statement,
once in statements of 25 ids (as the benches' clean-ups do) after the first lot was made
again — and after each deletion runs fold turns as the job runner does (one transaction,
synchronous_commit off, every 0.5 s) until a turn folds nothing and no removal is pending.
The stack's own runner is stopped (SIGSTOP) meanwhile, so only these turns fold. Prints each
turn's wall and backend CPU time, the removals live and dead before it, and at the end
whether every summary equals its recount from the reports."""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid

import psycopg2
import psycopg2.extras

STATE = os.environ["STATE"]
ADMIN = f"host={STATE}/run dbname=tideway user=postgres"
TABLES = ("boarding_days", "officer_days", "tally_days")


def backend_cpu_ms(pid):
    """A process's CPU time so far (/proc/PID/schedstat: nanoseconds, not clock ticks)."""
    return int(open(f"/proc/{pid}/schedstat").read().split()[0]) / 1e6


def report(rid, rng, copy):
    """A boarding on one of 30 days, by one of 8 officers, somewhere in a square degree; or,
    for a `copy`, the same boarding every time (as the write bench pushes one document again
    under new ids): one day, one officer, one place."""
    if copy:
        rng = random.Random(0)
    day = f"2026-03-{rng.randint(1, 30):02d}T{rng.randint(0, 23):02d}:00:00Z"
    return {"_id": rid, "draft": False, "timestamp": day, "date": day,
            "reportingOfficer": {"name": {"first": "T", "last": "O"}, "email": f"officer{rng.randint(1, 8)}@test.tideway"},
            "vessel": {"name": "Vessel " + rid[-4:], "homePort": "P", "nationality": "GA", "permitNumber": "1"},
            "inspection": {"actualCatch": [{"fish": rng.choice(["Tuna", "Shark", "Cod"]), "number": 1,
                                            "weight": rng.randint(1, 300), "unit": "kg"}],
                           "summary": {"safetyLevel": {"level": rng.choice(["Green", "Amber", "Red"]), "amberReason": ""},
                                       "violations": [{"disposition": "Warning", "offence": {"code": f"V{rng.randint(1, 5)}",
                                                                                              "explanation": "x"}}]
                                       if rng.random() < 0.4 else []}},
            "location": [9 + rng.random(), -rng.random()]}


def insert(conn, partition, ids, rng, copy):
    with conn.cursor() as cur:
        psycopg2.extras.execute_batch(cur, "insert into sync.reports (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))",
                                      [(rid, partition, json.dumps(report(rid, rng, copy)), partition) for rid in ids], page_size=200)
    conn.commit()


def turns(conn, label):
    """Fold turns as the runner's, every 0.5 s, until one folds nothing with no removal pending."""
    rows = []
    with conn.cursor() as cur:
        cur.execute("select pg_backend_pid()")
        pid = cur.fetchone()[0]
        conn.commit()
        while True:
            cur.execute("select count(*) from app.boarding_removals")
            live = cur.fetchone()[0]
            cur.execute("select n_dead_tup from pg_stat_user_tables where relid = 'app.boarding_removals'::regclass")
            dead = cur.fetchone()[0]
            conn.commit()
            cpu, wall = backend_cpu_ms(pid), time.monotonic()
            cur.execute("set local synchronous_commit = off")
            cur.execute("select app.fold_boarding_summaries()")
            folded = cur.fetchone()[0]
            conn.commit()
            rows.append(((time.monotonic() - wall) * 1000, backend_cpu_ms(pid) - cpu, folded, live, dead))
            print(f"{label} turn {len(rows)}: {rows[-1][0]:.1f} ms wall, {rows[-1][1]:.0f} ms CPU, folded {folded}, "
                  f"removals before {live} live / {dead} dead", flush=True)
            if folded == 0 and live == 0:
                return rows
            time.sleep(0.5)


def drift(conn, partitions):
    found = 0
    with conn.cursor() as cur:
        for table in TABLES:
            measure = "entries" if table == "tally_days" else "boardings"
            cur.execute(f"""
                select count(*) from ((select * from app.{table} where partition = any(%(p)s) and {measure} <> 0
                                       except select * from app.{table}_computed where partition = any(%(p)s))
                                      union all
                                      (select * from app.{table}_computed where partition = any(%(p)s)
                                       except select * from app.{table} where partition = any(%(p)s))) d""", {"p": partitions})
            found += cur.fetchone()[0]
    conn.commit()
    return found


def runner_backends(runner):
    """The PostgreSQL backends at the other end of the runner's Unix sockets (`ss -xp`)."""
    owner, peer_of = {}, {}
    for line in subprocess.run(["ss", "-xpnH"], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) >= 9 and f[0] == "u_str":
            owner[f[5]], peer_of[f[5]] = re.findall(r"pid=(\d+)", line), f[7]
    return sorted({int(p) for local, pids in owner.items() if runner in pids
                   for p in owner.get(peer_of[local], []) if p != runner})


def idle(seconds):
    runner = open(os.path.join(STATE, "run", "jobs.pid")).read().strip()
    backends = runner_backends(runner)
    pids = [int(runner)] + backends
    before, started = [backend_cpu_ms(pid) for pid in pids], time.monotonic()
    time.sleep(seconds)
    spent = [backend_cpu_ms(pid) - b for pid, b in zip(pids, before)]
    turns = (time.monotonic() - started) / 0.5
    print(f"idle {seconds} s, ~{turns:.0f} turns: runner process {spent[0] / turns:.3f} ms CPU a turn, "
          f"its backends {sum(spent[1:]) / turns:.3f} ms a turn ({backends})")


def pause(runner, conn):
    """Stops the stack's runner between two turns (its backends idle, no watermark held)."""
    backends = runner_backends(str(runner))
    while True:
        os.kill(runner, signal.SIGSTOP)
        with conn.cursor() as cur:
            cur.execute("select count(*) from pg_stat_activity where pid = any(%s) and state <> 'idle'", (backends,))
            busy = cur.fetchone()[0]
        conn.commit()
        if not busy:
            return
        os.kill(runner, signal.SIGCONT)
        time.sleep(0.05)


def main():
    if sys.argv[1:2] == ["idle"]:
        return idle(float(sys.argv[2]))
    agencies, each, deleted = (int(a) for a in (sys.argv[1:] + ["4", "5000", "2000"][len(sys.argv) - 1:])[:3])
    rng = random.Random(22)
    runner = int(open(os.path.join(STATE, "run", "jobs.pid")).read())
    conn = psycopg2.connect(ADMIN)
    conn.autocommit = False
    partitions, ids, copies = [], {}, {}
    with conn.cursor() as cur:
        for _ in range(agencies):
            key = "Fold " + uuid.uuid4().hex[:8]
            cur.execute("insert into app.agencies (key, name) values (%s, %s)", (key, key))
            partitions.append("agency=" + key)
            copies["agency=" + key] = len(partitions) % 2 == 0  # every other agency: copies
    conn.commit()
    pause(runner, conn)
    try:
        started = time.monotonic()
        for p in partitions:
            ids[p] = [f"fold-{uuid.uuid4().hex[:12]}" for _ in range(each)]
            insert(conn, p, ids[p], rng, copies[p])
        print(f"{agencies * each} reports made in {time.monotonic() - started:.0f} s", flush=True)
        turns(conn, "made")
        print(f"drift after making: {drift(conn, partitions)} rows", flush=True)
        results = {}
        for mode in ("one statement", "statements of 25"):
            gone = {p: rng.sample(ids[p], deleted) for p in partitions}
            with conn.cursor() as cur:
                if mode == "one statement":
                    cur.execute("delete from sync.reports where id = any(%s)", ([x for p in partitions for x in gone[p]],))
                else:
                    for p in partitions:
                        for i in range(0, deleted, 25):
                            cur.execute("delete from sync.reports where id = any(%s)", (gone[p][i:i + 25],))
                            conn.commit()
            conn.commit()
            results[mode] = turns(conn, mode)
            print(f"drift after deleting in {mode}: {drift(conn, partitions)} rows", flush=True)
            for p in partitions:  # made again, for the next deletion
                insert(conn, p, gone[p], rng, copies[p])
            turns(conn, "made again")
        for mode, rows in results.items():
            print(f"{mode}: {len(rows)} turns, wall {' '.join(f'{r[0]:.0f}' for r in rows)} ms; "
                  f"CPU {' '.join(f'{r[1]:.0f}' for r in rows)} ms; total {sum(r[0] for r in rows):.0f} ms wall")
    finally:
        os.kill(runner, signal.SIGCONT)
        with conn.cursor() as cur:
            cur.execute("delete from sync.reports where partition = any(%s)", (partitions,))
        conn.commit()
        conn.close()


if __name__ == "__main__":
    main()
