"""Helpers for the patrol end-to-end tests: pushes, pulls, photos, the blob store and the
job runner of the test stack."""
import base64
import glob
import hashlib
import os
import re
import signal
import subprocess
import time
import uuid

import pytest

from conftest import ADMIN_DB, STATE, WORKER_DB, admin_db, api

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIDEWAY = os.path.join(REPO, ".build/release/tideway")
BLOB_ROOT = os.path.join(STATE, "blobs") if STATE else None


def push(tok, changes, client_id="pytest"):
    for c in changes:
        c.setdefault("changeId", str(uuid.uuid4()))
    r = api("POST", "/api/v1/sync/push", tok, json={"clientId": client_id, "changes": changes})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def push_one(tok, client_id="pytest", **change):
    return push(tok, [change], client_id)[0]


def pull_to_end(tok, partition, cursor=None):
    """Every change after `cursor`, and the cursor after them."""
    changes = []
    while True:
        r = api("POST", "/api/v1/sync/pull", tok, json={"partitions": {partition: cursor}})
        assert r.status_code == 200, r.text
        page = r.json()["partitions"][partition]
        assert page["status"] == "ok", page
        changes += page["changes"]
        cursor = page["cursor"]
        if not page["more"]:
            return changes, cursor


def jpeg(width=300, height=200, seed=None):
    """A real JPEG made with libvips (random noise, so that every call differs)."""
    path = f"/tmp/tideway-test-{uuid.uuid4().hex}"
    try:
        subprocess.run(["vips", "gaussnoise", path + ".v", str(width), str(height)], check=True)
        subprocess.run(["vips", "cast", path + ".v", path + "8.v", "uchar"], check=True)
        subprocess.run(["vips", "copy", path + "8.v", path + ".jpg[Q=90]"], check=True)
        with open(path + ".jpg", "rb") as f:
            return f.read()
    finally:
        for p in glob.glob(path + "*"):
            os.unlink(p)


def fake_jpeg(size=5000):
    """Bytes that start like a JPEG (enough for the upload's check) and are unique."""
    return b"\xff\xd8\xff\xe0" + os.urandom(size - 4)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def blob_path(digest):
    return os.path.join(BLOB_ROOT, digest[:2], digest[2:4], digest)


def all_blob_files():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(BLOB_ROOT, "??", "??", "*")))


def temp_files():
    return glob.glob(os.path.join(BLOB_ROOT, "tmp", "upload-*"))


def new_photo(tok, partition="agency=Gabon", **fields):
    pid = str(uuid.uuid4())
    doc = {"date": "2026-03-01T10:00:00Z", **fields}
    result = push_one(tok, collection="photos", partition=partition, id=pid, op="insert", doc=doc)
    assert result["status"] == "applied", result
    return pid


def b64(data):
    return base64.b64encode(data).decode()


def tool_env():
    """The environment `tideway jobs` and `tideway sweep-blobs` get in the test stack."""
    return {**os.environ, "TIDEWAY_DATABASE": WORKER_DB, "TIDEWAY_BLOB_ROOT": BLOB_ROOT, "TIDEWAY_HOME": REPO,
            "TIDEWAY_ADMIN_DATABASE": ADMIN_DB}


def tideway(*args, check=True):
    return subprocess.run([TIDEWAY, *args], env=tool_env(), capture_output=True, text=True, check=check, timeout=120)


def wait_for(predicate, timeout=30, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def as_caller(conn, tok):
    """Sets the claims of the token's owner in the connection's current transaction."""
    cur = conn.cursor()
    cur.execute("select * from app.authenticate(sha256(convert_to(%s, 'UTF8')), 'access')", (tok,))
    return cur


def runner_backends(runner_pid):
    """{backend pid: (its last statement, its wait event type)} of a `tideway jobs` process,
    told apart by the peer of each backend's Unix socket."""
    lines = subprocess.run(["ss", "-xpnH"], capture_output=True, text=True).stdout.splitlines()
    ends = {}  # socket -> (pids, its peer)
    for line in lines:
        f = line.split()
        if len(f) >= 9 and f[0] == "u_str":
            ends[f[5]] = ([int(x) for x in re.findall(r"pid=(\d+)", line)], f[7])
    peers = {pid for pids, peer in ends.values() if runner_pid in pids for pid in ends.get(peer, ([], None))[0]}
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select pid, query, wait_event_type from pg_stat_activity where pid = any(%s)", (list(peers),))
        return {pid: (query, wait) for pid, query, wait in cur.fetchall()}


def runner_states(runner_pid):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select state from pg_stat_activity where pid = any(%s)", (list(runner_backends(runner_pid)),))
        return [state for state, in cur.fetchall()]


@pytest.fixture
def stack_runner_paused():
    """Stops the stack's own job runner for the test (SIGSTOP) between two turns (none of its
    backends inside a transaction, so it holds no watermark), so that only the test's folds."""
    pid = int(open(os.path.join(STATE, "run", "jobs.pid")).read())
    os.kill(pid, signal.SIGSTOP)
    while any(state != "idle" for state in runner_states(pid)):
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.05)
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
