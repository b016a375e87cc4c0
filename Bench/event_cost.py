"""What a lone push's event costs the server, part by part (docs/performance/round-13.md, "What a
write's event costs"): the event publisher's process, its listening backend, its reading
backend, the stream-count reconciler's backend, the rest of PostgreSQL, the workers and
nginx, each from the scheduler's nanosecond counters (/proc/<pid>/task/*/schedstat) around
PUSHES lone ~2.3 KB reports pushed over HTTPS one after the other (as Bench/sql_legs_cpu.py).

Each LEG is NAME=BINARY: before the leg, the stack's publisher is replaced by `BINARY events`
(supervised as `stack.sh` does it, so `stack.sh down` stops it), or NAME=none: no publisher
(what the push costs without its event; nginx's difference is the publish). A `+sub` suffix
on the name holds one event stream on the partition during the leg (its events counted,
carried and thin). Legs alternate in every round, their order swapped every other round.

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/event_cost.py PUSHES ROUNDS main=/tmp/tideway-main branch=.build/release/tideway

Leaves the last leg's publisher running: run `stack.sh up` (or `down`) after."""
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid

import requests

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402
from proc_counters import read_pid, threads_ns  # noqa: E402
from sql_legs_cpu import connections, pids, pusher  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(wb.STATE, "log")


# What the listening connection runs (EventPublisher.run, its checkpoints); the reader's last
# statement is a read's last (the pull's changes), or a revocation read on its notification.
LISTENER_STATEMENTS = ("listen ", "events_checkpoint", "revoked_stream_channels", "forget_stream_revocations",
                       "events_to_catch_up", "synchronous_commit", "secrets")


def publisher_backends(admin, pids):
    """The publisher's backends `pids` by role, from what each last ran."""
    roles = {"listener": [], "reader": [], "reconciler": []}
    if not pids:
        return roles
    with admin.cursor() as cur:
        cur.execute("select pid, query from pg_stat_activity where pid = any(%s)", (pids,))
        for pid, query in cur.fetchall():
            if "event_streams" in query:
                roles["reconciler"].append(pid)
            elif any(word in query for word in LISTENER_STATEMENTS):
                roles["listener"].append(pid)
            else:  # its reads end with the pull's statement
                roles["reader"].append(pid)
    return roles


def parts(admin):
    """sql_legs_cpu's parts, the publisher's backends by role and apart from the rest of PostgreSQL."""
    members = pids()
    theirs = members["publisher's backends"]
    return {"publisher": members["publisher"], **publisher_backends(admin, theirs),
            "other pg": [p for p in members["postgres"] if p not in theirs],
            "workers": members["workers"], "nginx": members["nginx"]}


def snapshot(members):
    return {part: sum(threads_ns(p) for p in ids) for part, ids in members.items()}


def stop_publisher():
    supervisor = read_pid(os.path.join(wb.RUN_DIR, "supervise-events.pid"))
    if supervisor:
        try:
            os.kill(supervisor, 15)
        except ProcessLookupError:
            pass
        while os.path.exists(f"/proc/{supervisor}"):
            try:
                if os.waitpid(supervisor, os.WNOHANG)[0]:  # one this script started
                    break
            except ChildProcessError:
                pass
            time.sleep(0.05)
    for name in ("supervise-events.pid", "events.pid"):
        try:
            os.remove(os.path.join(wb.RUN_DIR, name))
        except FileNotFoundError:
            pass


def start_publisher(binary):
    """`binary events`, supervised as stack.sh's events_up does; returns once its reader is warm."""
    log = os.path.join(LOGS, "events.log")
    start = os.path.getsize(log) if os.path.exists(log) else 0
    with open(os.path.join(wb.RUN_DIR, "events.sockets")) as f:
        sockets = f.read().strip()
    env = dict(os.environ, TIDEWAY_DATABASE=f"host={wb.RUN_DIR} dbname=tideway user=tideway_worker",
               TIDEWAY_EVENTS_SOCKET=sockets, TIDEWAY_METRICS_DIR=os.path.join(wb.STATE, "metrics"))
    with open(log, "a") as out:
        supervisor = subprocess.Popen(
            [os.path.join(REPO, "Deploy/dev/supervise.sh"), os.path.join(wb.RUN_DIR, "events.pid"), log, binary, "events"],
            env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    with open(os.path.join(wb.RUN_DIR, "supervise-events.pid"), "w") as f:
        f.write(f"{supervisor.pid}\n")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(log) as f:
            f.seek(start)
            if "reader warmed" in f.read():
                time.sleep(0.5)
                return
        time.sleep(0.1)
    raise SystemExit(f"the publisher from {binary} did not warm its reader within 30 s (see {log})")


class Subscriber:
    """One event stream on the partition, read on a thread: its events counted."""

    def __init__(self, token):
        self.carried = self.thin = 0
        self.response = requests.get(f"{wb.URL}/api/v1/sync/events?partition=" + requests.utils.quote(wb.PARTITION, safe=""),
                                     headers={"Accept": "text/event-stream", "Authorization": f"Bearer {token}"},
                                     stream=True, verify=wb.CA, timeout=(10, 600))
        self.response.raise_for_status()
        threading.Thread(target=self._read, daemon=True).start()
        time.sleep(1)  # nchan holds it (the subscribe hook answered)

    def _read(self):
        try:
            for raw in self.response.iter_lines(chunk_size=1, decode_unicode=True):
                if raw and raw.startswith("data:"):
                    if '"changes"' in raw:
                        self.carried += 1
                    else:
                        self.thin += 1
        except Exception:
            pass

    def close(self):
        self.response.close()


def leg(http, admin, tok, doc, binary, subscribe, pushes):
    stop_publisher()
    if binary != "none":
        start_publisher(binary)
    stream = Subscriber(tok) if subscribe else None
    prefix = f"cost-{uuid.uuid4().hex[:8]}-"
    push = pusher(http, doc, prefix)

    for i in range(10):  # connections and statements warm, the partition's first event past
        push(f"{prefix}warm-{i}")
    time.sleep(0.5)
    members = parts(admin)
    counted = (stream.carried, stream.thin) if stream else None
    before = snapshot(members)
    for n in range(pushes):
        push(f"{prefix}{n}")
    time.sleep(0.5)  # the last events published
    after = snapshot(members)
    events = (stream.carried - counted[0], stream.thin - counted[1]) if stream else None
    if stream:
        stream.close()
    wb.count_and_remove(prefix)
    wb.wait_folded()
    cpu = {part: (after[part] - before[part]) / pushes / 1e6 for part in members}
    cpu["server"] = sum(cpu.values())
    return cpu, events


def main():
    pushes, rounds = int(sys.argv[1]), int(sys.argv[2])
    legs = [a.split("=", 1) for a in sys.argv[3:]]
    names = [name for name, _ in legs]
    binaries = dict(legs)
    doc, tok = wb.source_doc(), wb.token()
    http, admin = connections(tok)
    results = {name: [] for name in names}
    columns = None
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            cpu, events = leg(http, admin, tok, doc, binaries[name], name.endswith("+sub"), pushes)
            columns = columns or list(cpu)
            results[name].append(cpu)
            load = open("/proc/loadavg").read().split()[0]
            print(f"{time.strftime('%H:%M:%S')} load {load} round {r + 1} {name:>12}: ms per push " +
                  ", ".join(f"{k} {v:.3f}" for k, v in cpu.items()) +
                  (f"; events carried {events[0]}, thin {events[1]}" if events else ""), flush=True)
    print("\nmedians, ms of CPU per lone push:")
    for name in names:
        print(f"{name:>12}: " + ", ".join(f"{k} {statistics.median(c[k] for c in results[name]):.3f}" for k in columns))
    print(json.dumps({name: {k: statistics.median(c[k] for c in results[name]) for k in columns} for name in names}))
    admin.close()


if __name__ == "__main__":
    main()
