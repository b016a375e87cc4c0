"""Backup and restore as commands (issue 20, Operations): `tideway backup <dir>` of the
running test stack, `tideway restore <dir>` into a fresh PostgreSQL cluster this test makes
itself (initdb into a temp folder, its own unix socket, no TCP), then everything checked
against the source: documents, users, logins (a revoked one stays revoked), report history
chains (`tideway verify-history`), photo blobs (bytes and SHA-256)."""
import getpass
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

import psycopg2
import pytest

from conftest import ADMIN_DB, PASSWORD, STATE, api, fastcgi, login, new_user
from patrol_support import BLOB_ROOT, REPO, TIDEWAY, blob_path, fake_jpeg, new_photo, push_one, sha, tideway, tool_env

PG_BIN = "/usr/lib/postgresql/15/bin"
ROOT = os.getuid() == 0
PG_USER = "postgres" if ROOT else getpass.getuser()

REPORT = {"timestamp": "2026-03-01T10:00:00Z", "draft": True,
          "vessel": {"name": "Backup", "homePort": "Libreville", "nationality": "Gabon", "permitNumber": "B-1"}}
# Tables compared row by row between the source and the restored database (the ones no
# background process of the test stack writes meanwhile).
STABLE = ["sync.reports", "app.report_history", "app.users", "app.logins", "app.tokens", "app.photo_blobs",
          "app.agencies", "app.settings"]


def as_pg(*args, check=True):
    return subprocess.run((["runuser", "-u", "postgres", "--"] if ROOT else []) + list(args), check=check,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def fresh():
    """An empty PostgreSQL cluster with an empty `tideway` database, and an empty blob folder."""
    base = tempfile.mkdtemp(prefix="restore-", dir=STATE)
    data, run = os.path.join(base, "pg"), os.path.join(base, "run")
    os.makedirs(run)
    if ROOT:
        shutil.chown(base, "postgres")
        shutil.chown(run, "postgres")
    as_pg(os.path.join(PG_BIN, "initdb"), "-D", data, "-U", PG_USER, "--auth-local=trust", "--auth-host=reject",
          "-E", "UTF8", "--locale=C.UTF-8")
    as_pg(os.path.join(PG_BIN, "pg_ctl"), "-D", data, "-l", os.path.join(base, "postgres.log"), "-w", "-t", "60",
          "-o", f"-c listen_addresses='' -c unix_socket_directories={run}", "start")
    try:
        as_pg(os.path.join(PG_BIN, "createdb"), "-h", run, "-U", PG_USER, "tideway")
        yield {"db": f"host={run} dbname=tideway user={PG_USER}", "blobs": os.path.join(base, "blobs"),
               "backup": os.path.join(base, "backup")}
    finally:
        as_pg(os.path.join(PG_BIN, "pg_ctl"), "-D", data, "-m", "immediate", "stop", check=False)
        shutil.rmtree(base, ignore_errors=True)


def run_tool(*args, check=True):
    started = time.monotonic()
    out = subprocess.run([TIDEWAY, *args], env=tool_env(), capture_output=True, text=True, timeout=600)
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out, time.monotonic() - started


def rows_digest(conninfo, table):
    with psycopg2.connect(conninfo) as conn, conn.cursor() as cur:
        cur.execute("set timezone = 'UTC'")
        cur.execute(f"select count(*), md5(coalesce(string_agg(t::text, E'\\n' order by t::text), '')) from {table} t")
        return cur.fetchone()


def authenticates(conninfo, token):
    with psycopg2.connect(conninfo) as conn, conn.cursor() as cur:
        try:
            cur.execute("select user_id from app.authenticate(sha256(convert_to(%s, 'UTF8')), 'access')", (token,))
            return str(cur.fetchone()[0])
        except psycopg2.errors.InvalidAuthorizationSpecification:
            return None


def test_backup_then_restore_onto_a_fresh_cluster_gives_back_everything(fresh):
    # Something of everything: a user with a live and a revoked login, a report with a
    # history of two entries, two photos with their bytes in the blob store.
    email = new_user()
    live = login(email, device="backup-phone")
    revoked = login(email)["accessToken"]
    assert api("POST", "/api/v1/auth/logout", revoked).status_code == 204
    tok = live["accessToken"]
    rid = str(uuid.uuid4())
    push_one(tok, "backup-tablet", collection="reports", partition="agency=Gabon", id=rid, op="insert", doc=REPORT)
    push_one(tok, "backup-tablet", collection="reports", partition="agency=Gabon", id=rid, op="update",
             patch={"draft": False})
    photos = {}
    for _ in range(2):
        pid = new_photo(tok, referencingReportID=rid)
        data = fake_jpeg(200_000)
        r = api("PUT", f"/api/v1/blobs/{pid}", tok, data=data, headers={"Content-Type": "image/jpeg"})
        assert r.status_code in (200, 201), r.text
        photos[pid] = sha(data)
    # A device's cursor at the backup (it will be behind the restored data, or level with it).
    behind = pull_all(lambda body: api("POST", "/api/v1/sync/pull", tok, json=body).json(), None)

    out, backup_seconds = run_tool("backup", fresh["backup"])
    print(f"\nbackup ({backup_seconds:.2f} s):\n{out.stdout}")
    for name in ["manifest.json", "roles.sql", "tideway.dump"]:
        assert os.path.getsize(os.path.join(fresh["backup"], name)) > 0
    for digest in photos.values():
        with open(os.path.join(fresh["backup"], "blobs", digest[:2], digest[2:4], digest), "rb") as f:
            assert sha(f.read()) == digest

    out, restore_seconds = run_tool("restore", "--database", fresh["db"], "--blob-root", fresh["blobs"], fresh["backup"])
    print(f"restore ({restore_seconds:.2f} s):\n{out.stdout}")
    assert "DIFFERENT" not in out.stdout

    # Rows: identical, table by table (tables nothing writes while the test runs).
    for table in STABLE:
        assert rows_digest(fresh["db"], table) == rows_digest(ADMIN_DB, table), table
    with psycopg2.connect(fresh["db"]) as conn, conn.cursor() as cur:
        cur.execute("select doc from sync.reports where id = %s", (rid,))
        assert cur.fetchone()[0]["draft"] is False
        cur.execute("select count(*) from app.report_history where report_id = %s", (rid,))
        assert cur.fetchone()[0] == 2
        cur.execute("select rolname from pg_roles where rolname like 'tideway%' order by 1")
        assert [r[0] for r in cur.fetchall()] == ["tideway_owner", "tideway_worker"]
        cur.execute("select photo_id, sha256 from app.photo_blobs where photo_id = any(%s)", (list(photos),))
        assert dict(cur.fetchall()) == photos
        cur.execute("select distinct sha256 from app.photo_blobs")
        named = [r[0] for r in cur.fetchall()]
    # Every blob a photo names is in the new blob folder with its bytes.
    for digest in named:
        with open(os.path.join(fresh["blobs"], digest[:2], digest[2:4], digest), "rb") as f:
            assert sha(f.read()) == digest
    for digest in photos.values():
        with open(os.path.join(fresh["blobs"], digest[:2], digest[2:4], digest), "rb") as f, open(blob_path(digest), "rb") as g:
            assert f.read() == g.read()

    # History chains hold, the same count as on the source.
    here = tideway("verify-history").stdout
    there = run_tool("verify-history", "--database", fresh["db"])[0].stdout
    assert "every chain holds" in there
    assert there.splitlines()[0] == here.splitlines()[0], (here, there)

    # Sign-ins: the live token still authenticates, the revoked one does not.
    assert authenticates(fresh["db"], tok) == live["user"]["id"]
    assert authenticates(fresh["db"], revoked) is None

    # The worker role logs in on the restored cluster and row-level security still holds.
    worker = fresh["db"].replace(f"user={PG_USER}", "user=tideway_worker")
    with psycopg2.connect(worker) as conn, conn.cursor() as cur:
        cur.execute("select count(*) from sync.reports")
        assert cur.fetchone()[0] == 0
        cur.execute("select user_id from app.authenticate(sha256(convert_to(%s, 'UTF8')), 'access')", (tok,))
        cur.execute("select count(*) from sync.reports where id = %s", (rid,))
        assert cur.fetchone()[0] == 1

    # Meanwhile on the source, the device syncs a change made after the backup (one the
    # restore has lost): its cursor stands past the restored data.
    lost = str(uuid.uuid4())
    push_one(tok, "backup-tablet", collection="reports", partition="agency=Gabon", id=lost, op="insert", doc=REPORT)
    past = pull_all(lambda body: api("POST", "/api/v1/sync/pull", tok, json=body).json(), behind)
    assert past != behind
    devices_reset_cleanly(fresh, tok, behind, past, rid, lost)

    # A second restore onto the now full database is refused; so is a damaged backup.
    again, _ = run_tool("restore", "--database", fresh["db"], "--blob-root", fresh["blobs"], fresh["backup"], check=False)
    assert again.returncode != 0 and "not empty" in again.stderr + again.stdout
    damaged = fresh["backup"] + "-damaged"
    shutil.copytree(fresh["backup"], damaged)
    with open(os.path.join(damaged, "tideway.dump"), "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0xFF]))
    broken, _ = run_tool("restore", "--database", fresh["db"], "--blob-root", fresh["blobs"], damaged, check=False)
    assert broken.returncode != 0 and "damaged" in broken.stderr + broken.stdout


def pull_all(pull, cursor):
    """Pulls agency=Gabon from `cursor` to its end; answers the last cursor."""
    while True:
        answer = pull({"partitions": {"agency=Gabon": cursor}, "limit": 1000})["partitions"]["agency=Gabon"]
        assert answer["status"] == "ok", answer
        cursor = answer["cursor"]
        if not answer["more"]:
            return cursor


def devices_reset_cleanly(fresh, tok, behind, past, kept, lost):
    """A worker on the restored database: a device whose cursor stands past the restored data
    (it pulled a change the restore lost), and one level with the backup, get `reset` rather
    than a silent gap; pulling afresh gives the restored state, and a change made after the
    restore reaches them."""
    folder = tempfile.mkdtemp(prefix="restored-worker-", dir=STATE)
    sock = os.path.join(folder, "worker.sock")
    worker = subprocess.Popen(
        [os.path.join(os.path.dirname(TIDEWAY), "tideway-worker")],
        env={**os.environ, "TIDEWAY_DATABASE": fresh["db"].replace(f"user={PG_USER}", "user=tideway_worker"),
             "TIDEWAY_SOCKET": sock, "TIDEWAY_THREADS": "2", "TIDEWAY_HOME": REPO,
             "TIDEWAY_BLOB_ROOT": fresh["blobs"], "TIDEWAY_METRICS_DIR": ""},
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(folder, "worker.log"), "w"))
    try:
        def pull(body):
            status, _, answer = fastcgi(sock, "POST", "/api/v1/sync/pull",
                                        headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/json"},
                                        body=json.dumps(body).encode())
            assert status == 200, answer
            return json.loads(answer)

        deadline = time.monotonic() + 30
        while not os.path.exists(sock):
            assert time.monotonic() < deadline and worker.poll() is None, "the worker on the restored database did not start"
            time.sleep(0.1)
        for cursor in (past, behind):
            answer = pull({"partitions": {"agency=Gabon": cursor}})["partitions"]["agency=Gabon"]
            assert answer["status"] == "reset", answer
        ids = set()
        cursor = None
        while True:
            answer = pull({"partitions": {"agency=Gabon": cursor}, "limit": 1000})["partitions"]["agency=Gabon"]
            assert answer["status"] == "ok", answer
            ids |= {c["id"] for c in answer["changes"]}
            cursor = answer["cursor"]
            if not answer["more"]:
                break
        assert kept in ids and lost not in ids
        # Work goes on: a change made after the restore reaches the device that pulled afresh.
        after = str(uuid.uuid4())
        status, _, body = fastcgi(sock, "POST", "/api/v1/sync/push",
                                  headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/json"},
                                  body=json.dumps({"clientId": "backup-tablet", "changes": [
                                      {"changeId": uuid.uuid4().hex, "collection": "reports", "partition": "agency=Gabon",
                                       "id": after, "op": "insert", "doc": REPORT}]}).encode())
        assert status == 200 and json.loads(body)["results"][0]["status"] == "applied", body
        answer = pull({"partitions": {"agency=Gabon": cursor}})["partitions"]["agency=Gabon"]
        assert answer["status"] == "ok" and after in [c["id"] for c in answer["changes"]], answer
    finally:
        worker.terminate()
        worker.wait(20)
        shutil.rmtree(folder, ignore_errors=True)


def test_backup_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "something").write_text("x")
    out, _ = run_tool("backup", str(tmp_path), check=False)
    assert out.returncode != 0 and "not empty" in out.stderr + out.stdout


def test_the_sweep_removes_no_blob_while_a_backup_runs():
    """The backup's lock (held from its snapshot until its blobs are copied) stops the sweep
    from removing a blob a photo deleted after the snapshot named."""
    data = fake_jpeg(1000)
    digest = sha(data)
    path = blob_path(digest)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)  # named by no photo: garbage, once no backup runs
    conn = psycopg2.connect(ADMIN_DB)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("select pg_advisory_lock(hashtextextended('tideway-backup', 0))")
        assert tideway("sweep-blobs").returncode == 0
        assert os.path.exists(path)
        # And a second backup waits for none: it says another one runs, and writes nothing.
        folder = os.path.join(STATE, f"backup-{uuid.uuid4().hex}")
        out, _ = run_tool("backup", folder, check=False)
        assert out.returncode != 0 and "another backup is running" in out.stderr + out.stdout
        assert not os.path.exists(folder)
    finally:
        conn.close()
    assert tideway("sweep-blobs").returncode == 0
    assert not os.path.exists(path)
