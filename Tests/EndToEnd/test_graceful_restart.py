"""Graceful shutdown (issue 20, operations): SIGTERM to a worker, as `systemctl restart`
sends, drains what it has in hand; under steady pushes, pulls and long polls, restarting
every worker in turn fails no request (no 502/503), and a long poll in flight is answered
rather than cut."""
import threading
import time
import uuid

from conftest import new_user, worker_pids
from synclib import Client, change, doc_for, new_agency

ROUNDS = 3  # each restarts every worker once


def wait_for_restart(name, old, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = worker_pids().get(name)
        if pid and pid != old:
            return pid
        time.sleep(0.05)
    raise AssertionError(f"{name} was not restarted")


def test_restarting_every_worker_under_load_fails_no_request():
    import os
    import signal
    # An agency of its own: the pushes below run as fast as the machine allows (some 9,000
    # reports on a quiet one), which must not grow the demo agency that other tests pull
    # whole in one page (test_sync_isolation's matrix, limit 10,000).
    agency = new_agency()
    officer = new_user(agency=agency)
    clients = [Client(officer) for _ in range(4)]
    waiter = Client(new_user(agency=agency))
    stop = threading.Event()
    answers, failures = [], []

    def load(client):
        partition = "agency=" + agency
        while not stop.is_set():
            rid = f"restart-{uuid.uuid4().hex}"
            try:
                r = client.push_raw([change("insert", "reports", partition, rid, doc_for("reports", rid))])
                answers.append(r.status_code)
                if r.status_code != 200:
                    failures.append(("push", r.status_code, r.text[:200]))
                r = client.pull_raw({partition: None}, limit=5)
                answers.append(r.status_code)
                if r.status_code != 200:
                    failures.append(("pull", r.status_code, r.text[:200]))
            except Exception as error:  # a cut connection
                failures.append(("exception", repr(error)))

    def long_polls():
        cursor = None
        answer = waiter.pull({"user=" + waiter.id: None})
        cursor = answer["user=" + waiter.id]["cursor"]
        while not stop.is_set():
            try:
                r = waiter.pull_raw({"user=" + waiter.id: cursor}, wait=5)
                answers.append(r.status_code)
                if r.status_code != 200:
                    failures.append(("long poll", r.status_code, r.text[:200]))
            except Exception as error:
                failures.append(("long poll exception", repr(error)))

    threads = [threading.Thread(target=load, args=(c,)) for c in clients] + [threading.Thread(target=long_polls)]
    for t in threads:
        t.start()
    try:
        time.sleep(1)
        for _ in range(ROUNDS):
            for name, pid in sorted(worker_pids().items()):
                assert pid, name
                os.kill(pid, signal.SIGTERM)
                wait_for_restart(name, pid)
                time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=40)
    print(f"{len(answers)} answers, {len(failures)} failed while restarting workers {ROUNDS} times each")
    assert len(answers) > 50
    assert failures == [], failures[:10]
