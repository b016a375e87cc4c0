"""Which PostgreSQL backends every write wakes (docs/performance/round-07.md, "Listeners woken per
commit"). PostgreSQL 15 signals every backend that LISTENs on anything in the database at
each commit that notifies, whatever the channel. Only the processes that act on every
change may listen: each worker's ChangeHub and the event publisher, one connection each.
The job runner takes its jobs at its turns and the stream-count reconciler hears its
requests through the publisher's connection, so neither has a listening backend.

Seen from outside, as the kernel counts it: a backend signalled by a NOTIFY is scheduled
in to read it (the third figure of /proc/<pid>/schedstat). Twenty notifications on a
channel no one listens to, 50 ms apart, wake each listening backend about twenty times
more than the same second without them; any other backend wakes only for its own work
(the job runner's turns, and its jobs when earlier tests left some), in both seconds alike."""
import os
import re
import subprocess
import time

from conftest import STATE, admin_db

NOTIFIES = 20


def pidfile(name):
    with open(os.path.join(STATE, "run", name)) as f:
        return f.read().split()[0]


def backends():
    """The postmaster's children: every PostgreSQL process now."""
    with open(os.path.join(STATE, "pg", "postmaster.pid")) as f:
        postmaster = f.readline().strip()
    with open(f"/proc/{postmaster}/task/{postmaster}/children") as f:
        return f.read().split()


def scheduled_in(pids):
    """{pid: times it was scheduled in so far}."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                out[pid] = int(f.read().split()[2])
        except OSError:
            pass
    return out


def client_of(pids):
    """{backend pid: the pid of the process at the other end of its socket}, from `ss`."""
    owners, peer = {}, {}
    for line in subprocess.run(["ss", "-xpnH"], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0] == "u_str":
            owners[fields[5]] = re.findall(r"pid=(\d+)", line)
            peer[fields[5]] = fields[7]
    out = {}
    for inode, found in owners.items():
        for pid in found:
            if pid in pids:
                other = [p for p in owners.get(peer[inode], []) if p != pid]
                if other:
                    out[pid] = other[0]
    return out


def workers():
    run = os.path.join(STATE, "run")
    return [pidfile(f) for f in sorted(os.listdir(run)) if re.fullmatch(r"worker-\d+\.pid", f)]


def woken_by_notifications(pids):
    """The backends that a second of notifications woke at least NOTIFIES / 2 times more than
    the second just before it, without them."""
    conn = admin_db()  # not `with conn`: psycopg2 makes that one transaction, its notifications one
    with conn.cursor() as cur:
        cur.execute("select pg_backend_pid()")
        own = str(cur.fetchone()[0])
        counts = [scheduled_in(pids)]
        for notifying in (False, True):
            for n in range(NOTIFIES):
                cur.execute("select pg_notify('tideway_listener_probe', %s)" if notifying else "select %s", (str(n),))
                time.sleep(0.05)
            time.sleep(0.1)
            counts.append(scheduled_in(pids))
    conn.close()
    quiet, probe = ({p: b[p] - a[p] for p in a if p in b} for a, b in zip(counts, counts[1:]))
    return [p for p in probe if p != own and p in quiet and probe[p] - quiet[p] >= NOTIFIES // 2]


def test_only_the_change_listeners_wake_at_a_commit_that_notifies():
    named = {pidfile("events.pid"): "events", pidfile("jobs.pid"): "jobs",
             **{w: f"worker {i + 1}" for i, w in enumerate(workers())}}
    expected = {"events": 1, **{f"worker {i + 1}": 1 for i in range(len(workers()))}}
    # A backend busy with work of its own in one second and not the other can look woken:
    # three tries. A backend that listens is woken in every one.
    for _ in range(3):
        woken = woken_by_notifications(backends())
        clients = client_of(set(woken))
        listening = {}
        # Only backends with a client: the WAL writer wakes at each notifying commit too.
        for backend in (b for b in woken if b in clients):
            client = named.get(clients[backend], f"pid {clients[backend]}")
            listening[client] = listening.get(client, 0) + 1
        if listening == expected:
            return
    assert listening == expected, f"backends woken by every notification, per client process: {listening}"
