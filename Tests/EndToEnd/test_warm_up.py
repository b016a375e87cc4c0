"""The workers' warm-up at start (Sources/Sync/WarmUp.swift, Migrations/repeatable/0105_warm_up.sql):
a restarted worker runs a made-up push on its pooled connections and rolls it back. It must
leave no trace a client or an operator could see (rows, clocks, notifications, events), the
first real push after it must carry all its effects, and a worker started while PostgreSQL
is down must wait and serve as before, not crash-loop."""
import os
import re
import signal
import threading
import time
import uuid

import psycopg2

from conftest import ADMIN_DB, STATE, admin_db, api, login, new_user, worker_pids
from synclib import Client, Replica, counts, new_agency
from test_events import Stream, wait_until_subscribed
from test_operations import PG_CTL, alive, as_postgres, healthz_direct

PATIENCE = 60
WARMED = re.compile(r"warm-up: the write path and pull of (\d+) connections warmed in ([0-9.]+) ms")
WARMED_LATER = re.compile(r"warm-up: a connection opened later (warmed in [0-9.]+ ms|not warmed: .*)")


def log_of(worker):
    with open(os.path.join(STATE, "log", worker + ".log"), errors="replace") as f:
        return f.read()


def restart(worker):
    """SIGTERM to one worker; answers once its replacement (started by the supervisor)
    serves on its own socket, with the replacement's pid."""
    old = worker_pids()[worker]
    os.kill(old, signal.SIGTERM)
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        pid = worker_pids().get(worker)
        if pid and pid != old and healthz_direct(worker) == 200:
            return pid
        time.sleep(0.02)
    raise AssertionError(f"{worker} was not replaced")


def warm_up_lines(worker, since):
    """The warm-up lines the worker's log gained after offset `since`."""
    return [m for m in WARMED.finditer(log_of(worker)[since:])]


def history_ids():
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*), (select last_value from app.report_history_id_seq) from app.report_history")
        return cur.fetchone()


def test_a_restarted_worker_warms_up_without_a_trace():
    agency = new_agency()
    partition = f"agency={agency}"
    officer = new_user(agency=agency)
    device = Replica(Client(token=login(officer)["accessToken"]), [partition])
    device.pull(partition)
    cursor = device.cursors[partition]
    stream = Stream(login(officer)["accessToken"], [partition])
    assert stream.status == 200
    wait_until_subscribed(stream)
    listener = psycopg2.connect(ADMIN_DB)
    listener.autocommit = True
    listener.cursor().execute("listen tideway_changes")
    before = counts()
    (history_before, last_id_before) = history_ids()
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.devices")
        devices_before = cur.fetchone()[0]
        cur.execute("select count(*) from app.partition_clocks")
        clocks_before = cur.fetchone()[0]
    offsets = {w: len(log_of(w)) for w in worker_pids()}

    for worker in sorted(offsets):
        restart(worker)

    for worker, offset in offsets.items():
        lines = warm_up_lines(worker, offset)
        assert lines, f"{worker} logged no warm-up"
        assert int(lines[-1].group(1)) >= 1, lines[-1].group(0)
        print(f"\n{worker}: {lines[-1].group(0)}")
    # Nothing stayed: rows of every sync table, clocks, push log, history, devices.
    assert counts() == before
    (history_after, last_id_after) = history_ids()
    assert history_after == history_before
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.devices")
        assert cur.fetchone()[0] == devices_before
        cur.execute("select count(*) from app.partition_clocks")
        assert cur.fetchone()[0] == clocks_before
        cur.execute("select count(*) from app.partition_clocks where partition like 'agency=warm-up-%'")
        assert cur.fetchone()[0] == 0
    # The one thing a rollback does not undo: the history's id sequence moved, by at most one
    # per warmed connection (0105 says why no cursor can see it).
    warmed = sum(int(warm_up_lines(w, o)[-1].group(1)) for w, o in offsets.items())
    assert last_id_before <= last_id_after <= last_id_before + warmed
    # No notification was sent (NOTIFY is delivered at commit only) and no event published.
    # Others may come meanwhile (the presence sweep writes users' documents): none may name
    # this agency or a warm-up's made-up one.
    time.sleep(1.0)
    listener.poll()
    named = [n.payload for n in listener.notifies if n.payload.startswith((partition, "agency=warm-up"))]
    assert named == []
    assert stream.next(timeout=1.0) == "timeout"
    # A cursor pull right after sees nothing new.
    entry = device.client.pull({partition: cursor})[partition]
    assert entry["status"] == "ok" and entry["changes"] == [] and not entry["more"], entry

    # The first real push after the restart: applied, with its history entry and its event.
    rid = "warm-" + uuid.uuid4().hex[:16]
    result = device.push_one({"collection": "reports", "partition": partition, "id": rid, "op": "insert",
                              "doc": {"_id": rid, "timestamp": "2026-11-26T10:00:00Z", "draft": True}})
    assert result["status"] == "applied", result
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*), min(prev_hash) from app.report_history where report_id = %s", (rid,))
        assert cur.fetchone() == (1, "")
        cur.execute("select device from app.report_history where report_id = %s", (rid,))
        assert cur.fetchone()[0] == device.client_id
    event = stream.next(timeout=10)
    assert event not in (None, "timeout"), event
    assert partition in event["data"]
    device.pull(partition)
    assert device.doc(partition, "reports", rid) is not None
    stream.close()
    listener.close()


def test_connections_opened_under_a_burst_are_warmed_without_a_trace():
    """A burst opens connections beyond the two warmed at start (up to one per thread): each is
    warmed once it is given back, off the request, and the warm-up leaves nothing behind."""
    # The demo agency: its pulls hold their connection for a while.
    partition = "agency=Gabon"
    token = login(new_user(agency="Gabon"))["accessToken"]
    listener = psycopg2.connect(ADMIN_DB)
    listener.autocommit = True
    listener.cursor().execute("listen tideway_changes")
    (history_before, last_id_before) = history_ids()
    before = counts()
    for worker in sorted(worker_pids()):
        restart(worker)
    offsets = {w: len(log_of(w)) for w in worker_pids()}

    together = threading.Barrier(24)

    def pulls():
        together.wait()
        for _ in range(5):
            r = api("POST", "/api/v1/sync/pull", token=token, json={"partitions": {partition: None}})
            assert r.status_code == 200, r.text
    # 24 at once across two workers that hold two connections each.
    threads = [threading.Thread(target=pulls) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    deadline = time.monotonic() + PATIENCE
    later = []
    while time.monotonic() < deadline and not later:
        later = [m.group(1) for w, o in offsets.items() for m in WARMED_LATER.finditer(log_of(w)[o:])]
        time.sleep(0.1)
    assert later, "no connection opened under the burst was warmed"
    # The first line seen is not the last: every connection the burst opened is warmed as it is
    # given back, each on its own, so the lines are read again until none came for a second
    # (counting only the first ones let a warm-up still running move the ids past the bound).
    while time.monotonic() < deadline:
        time.sleep(1.0)
        again = [m.group(1) for w, o in offsets.items() for m in WARMED_LATER.finditer(log_of(w)[o:])]
        if len(again) == len(later):
            break
        later = again
    assert all(line.startswith("warmed in") for line in later), later
    print(f"\n{len(later)} connections opened under the burst warmed")
    # Nothing stayed, as at start; the history's ids moved by at most one per warmed connection.
    assert counts() == before
    (history_after, last_id_after) = history_ids()
    assert history_after == history_before
    warmed = len(later) + sum(int(warm_up_lines(w, 0)[-1].group(1)) for w in offsets)
    assert last_id_before <= last_id_after <= last_id_before + warmed
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.partition_clocks where partition like 'agency=warm-up%'")
        assert cur.fetchone()[0] == 0
    listener.poll()
    assert [n.payload for n in listener.notifies if n.payload.startswith("agency=warm-up")] == []
    listener.close()


def test_a_worker_started_while_postgresql_is_down_waits_then_warms_and_serves():
    pgdata = os.path.join(STATE, "pg")
    worker = "worker-1"
    old = worker_pids()[worker]
    offset = len(log_of(worker))
    as_postgres(PG_CTL, "-D", pgdata, "-m", "fast", "-w", "stop")
    try:
        os.kill(old, signal.SIGTERM)
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline and worker_pids().get(worker) in (None, old):
            time.sleep(0.02)
        new = worker_pids()[worker]
        assert new and new != old
        # It waits for the database (App.start) rather than exiting: the same process 2 s later.
        time.sleep(2.0)
        assert worker_pids()[worker] == new and alive(new)
        assert "waiting for the database" in log_of(worker)[offset:]
    finally:
        as_postgres(PG_CTL, "-D", pgdata, "-l", os.path.join(STATE, "log", "postgres.log"), "-w", "-t", "60", "start")
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline and healthz_direct(worker) != 200:
        time.sleep(0.05)
    assert healthz_direct(worker) == 200
    assert worker_pids()[worker] == new, "the worker was restarted instead of waiting"
    assert warm_up_lines(worker, offset), "no warm-up once the database was up"
    assert api("GET", "/healthz").status_code == 200
    assert login(new_user())["user"]["role"] == "officer"
