"""A rolling upgrade under steady pushes, pulls and event streams (issue 20; the procedure
is docs/operations.md, "Rolling upgrade"): `tideway migrate` with a new migration while the
old workers serve, then every worker replaced one by one (SIGTERM, as `systemctl restart`
sends; the next only once the new one answers), then the event publisher and the job
runner. 0 failed requests, and every push's event arrives."""
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid

from conftest import ADMIN_DB, STATE, admin_db, new_user, worker_pids
from synclib import user_id
from test_events_restart import EVENT_BOUND, await_event, conversation_writer, publisher_pid, wait_for_new_publisher
from test_operations import healthz_direct

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIDEWAY = os.path.join(REPO, ".build/release/tideway")
PROBE = "0099_rolling_upgrade_probe.sql"
# An "expand" migration, as the procedure allows in a rolling release: a new table and a
# new nullable column the old workers do not know. Applying it also re-runs every
# repeatable file (functions, policies) in one transaction, under load.
PROBE_SQL = """
create table app.rolling_upgrade_probe (id bigserial primary key, note text);
alter table app.agencies add column rolling_upgrade_probe text;
"""


def pid_of(name):
    with open(os.path.join(STATE, "run", name + ".pid")) as f:
        text = f.read().strip()
    return int(text) if text.isdigit() else None


def wait_for_new(name, old, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = pid_of(name)
        if pid and pid != old:
            return pid
        time.sleep(0.05)
    raise AssertionError(f"{name} was not restarted")


def migrate_with_probe(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(os.path.join(REPO, "Migrations"), home / "Migrations")
    (home / "Migrations" / PROBE).write_text(PROBE_SQL)
    env = {**os.environ, "TIDEWAY_ADMIN_DATABASE": ADMIN_DB, "TIDEWAY_HOME": str(home)}
    started = time.monotonic()
    run = subprocess.run([TIDEWAY, "migrate"], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert PROBE in run.stdout and "repeatable/" in run.stdout, run.stdout
    return time.monotonic() - started


def undo_probe():
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("drop table if exists app.rolling_upgrade_probe")
        cur.execute("alter table app.agencies drop column if exists rolling_upgrade_probe")
        cur.execute("delete from public.tideway_migrations where name = %s", (PROBE,))


def test_a_rolling_upgrade_under_load_fails_no_request_and_loses_no_event(tmp_path):
    writers, per_writer = 3, 80
    stop, answers, failures, lags = threading.Event(), [], [], []

    def write(email, uid):
        with conversation_writer(email, uid, per_writer) as (client, conversations, streams, seen):
            for cid in conversations:
                if stop.is_set():
                    break
                stream = streams[cid]
                pushed_at = time.monotonic()
                try:
                    r = client.client.push_raw([{"changeId": uuid.uuid4().hex, "collection": "chatMessages",
                                                 "partition": f"conversation={cid}", "id": uuid.uuid4().hex,
                                                 "op": "insert",
                                                 "doc": {"text": "upgrade", "timestamp": "2026-11-21T10:00:00Z"}}],
                                               client_id=client.client_id)
                    answers.append(r.status_code)
                    if r.status_code != 200 or r.json()["results"][0]["status"] != "applied":
                        failures.append(("push", r.status_code, r.text[:200]))
                        continue
                    r = client.client.pull_raw({"agency=Gabon": None}, limit=5)
                    answers.append(r.status_code)
                    if r.status_code != 200:
                        failures.append(("pull", r.status_code, r.text[:200]))
                except Exception as error:  # a cut connection
                    failures.append(("exception", repr(error)))
                    continue
                lag = await_event(stream, cid, conversations, seen, pushed_at, failures)
                if lag is not None:
                    lags.append(lag)
                time.sleep(0.1)

    emails = [new_user(agency="Gabon") for _ in range(writers)]
    threads = [threading.Thread(target=write, args=(e, user_id(e))) for e in emails]
    for t in threads:
        t.start()
    steps = {}
    try:
        time.sleep(1.5)
        # 1. The new release's migrations, while the old workers serve.
        steps["migrate"] = migrate_with_probe(tmp_path)
        # 2. Workers one by one: each drains (SIGTERM) and its successor answers before the next goes.
        for name, pid in sorted(worker_pids().items()):
            started = time.monotonic()
            os.kill(pid, signal.SIGTERM)
            wait_for_new(name, pid)
            deadline = time.monotonic() + 30
            while healthz_direct(name) != 200:
                assert time.monotonic() < deadline, f"the new {name} never answered"
                time.sleep(0.05)
            steps[name] = time.monotonic() - started
        # 3. The event publisher (it catches up on start) and the job runner.
        for name in ("events", "jobs"):
            started, old = time.monotonic(), pid_of(name)
            os.kill(old, signal.SIGTERM)
            if name == "events":
                wait_for_new_publisher(old)
            else:
                wait_for_new(name, old)
            steps[name] = time.monotonic() - started
        time.sleep(1.5)
    finally:
        stop.set()
        for t in threads:
            t.join(EVENT_BOUND + 30)
        undo_probe()
    lags.sort()
    print(f"\nrolling upgrade: {', '.join(f'{k} {v:.1f} s' for k, v in steps.items())}; {len(answers)} answers, "
          f"{len(lags)} events (median {lags[len(lags) // 2] * 1000:.0f} ms, max {lags[-1] * 1000:.0f} ms), "
          f"{len(failures)} failures")
    assert failures == [], failures[:10]
    assert len(lags) >= 20
    assert publisher_pid()
