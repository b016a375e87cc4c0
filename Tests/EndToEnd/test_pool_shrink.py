"""The pool gives back what a burst opened (Sources/Database/ConnectionPool.swift,
TIDEWAY_POOL_IDLE_SECONDS): after a burst, PostgreSQL's backends of a worker fall back to the
connections a quiet worker keeps, and the worker serves (and grows again) as before.

The stack's workers keep the default (ten minutes), which a test cannot wait out; this test
starts a worker of its own on its own socket with a one-second limit, its connections named
by `application_name` so that PostgreSQL's view counts only them."""
import json
import os
import subprocess
import tempfile
import threading
import time

from conftest import STATE, WORKER_DB, admin_db, fastcgi, login, new_user
from patrol_support import REPO, TIDEWAY

NAME = "tideway-pool-shrink-test"
THREADS = 12
# The pool keeps the two connections the start warmed (WarmUp.connections); the worker's
# LISTEN connection for long polls is not the pool's and stays too.
KEPT = 2 + 1
PATIENCE = 60


def backends():
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from pg_stat_activity where application_name = %s", (NAME,))
        return cur.fetchone()[0]


def burst(sock, token):
    """THREADS clients at once, three pulls of the demo agency each (its pulls hold their
    connection for a while); answers the most backends seen while it ran."""
    together = threading.Barrier(THREADS)
    failures = []

    def pulls():
        together.wait()
        for _ in range(3):
            status, _, body = fastcgi(sock, "POST", "/api/v1/sync/pull", timeout=60,
                                      headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                                      body=json.dumps({"partitions": {"agency=Gabon": None}}).encode())
            if status != 200:
                failures.append((status, body[:200]))
    threads = [threading.Thread(target=pulls) for _ in range(THREADS)]
    for t in threads:
        t.start()
    peak = 0
    while any(t.is_alive() for t in threads):
        peak = max(peak, backends())
        time.sleep(0.02)
    for t in threads:
        t.join()
    assert not failures, failures
    return max(peak, backends())


def fall_back():
    """Waits until the worker's backends are down to those it keeps; answers the count."""
    deadline = time.monotonic() + PATIENCE
    count = backends()
    while count > KEPT and time.monotonic() < deadline:
        time.sleep(0.1)
        count = backends()
    return count


def test_a_workers_backends_fall_back_after_a_burst_and_it_grows_again():
    token = login(new_user(agency="Gabon"))["accessToken"]
    folder = tempfile.mkdtemp(prefix="pool-shrink-", dir=STATE)
    sock = os.path.join(folder, "worker.sock")
    worker = subprocess.Popen(
        [os.path.join(os.path.dirname(TIDEWAY), "tideway-worker")],
        env={**os.environ, "TIDEWAY_DATABASE": f"{WORKER_DB} application_name={NAME}",
             "TIDEWAY_SOCKET": sock, "TIDEWAY_THREADS": str(THREADS), "TIDEWAY_HOME": REPO,
             "TIDEWAY_BLOB_ROOT": os.path.join(folder, "blobs"), "TIDEWAY_METRICS_DIR": "",
             "TIDEWAY_POOL_IDLE_SECONDS": "1"},
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "worker.log"), "w"))
    try:
        deadline = time.monotonic() + PATIENCE
        while not os.path.exists(sock):
            assert time.monotonic() < deadline and worker.poll() is None, "the worker did not start"
            time.sleep(0.1)
        for round in (1, 2):
            peak = burst(sock, token)
            assert peak > KEPT, f"burst {round} opened no connection beyond those kept ({peak})"
            kept = fall_back()
            assert kept == KEPT, f"after burst {round}: {kept} backends stay (peak {peak})"
        # A lone request after the shrink is served, by what was kept.
        status, _, body = fastcgi(sock, "POST", "/api/v1/sync/pull",
                                  headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                                  body=json.dumps({"partitions": {"agency=WildAid": None}}).encode())
        assert status == 200, body
        assert worker.poll() is None
    finally:
        worker.terminate()
        worker.wait(timeout=30)
