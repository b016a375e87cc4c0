"""The client library (TidewayClient) end to end: the real `tideway-device` binary, one
launch per call like an app that can be killed at any moment, against the real stack.
Its state lives in a folder (tokens, one SQLite store per login)."""
import hashlib
import json
import os
import signal
import subprocess
import time

import pytest
import requests

from conftest import CA, STATE, URL, admin_db, new_user
from synclib import Client, new_agency, user_id

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICE = os.environ.get("TIDEWAY_DEVICE", os.path.join(REPO, ".build/release/tideway-device"))


class Device:
    """One device: a folder and the binary."""

    def __init__(self, folder):
        self.folder = str(folder)

    def args(self, *args):
        verb = 2 if args[0] == "chat" else 1
        return [DEVICE, *args[:verb], "--store", self.folder, "--url", URL, "--ca", CA, *args[verb:]]

    def run(self, *args, ok=True):
        done = subprocess.run(self.args(*args), capture_output=True, text=True, timeout=300)
        if ok:
            assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
            return json.loads(done.stdout) if done.stdout.strip() else None
        return done

    def start(self, *args):
        return subprocess.Popen(self.args(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def status(self):
        return self.run("status")

    def get(self, collection, doc_id):
        return self.run("get", collection, doc_id)


def signed_in(tmp_path, email, name="device", partitions=()):
    device = Device(tmp_path / name)
    user = device.run("login", email)
    assert user["email"] == email
    device.run("open", *partitions)
    return device


def server_reports(ids):
    """id -> (doc, history entries) as PostgreSQL holds them."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id, doc from sync.reports where id = any(%s) and not deleted", (list(ids),))
        docs = dict(cur.fetchall())
        cur.execute("select report_id, count(*) from app.report_history where report_id = any(%s) group by report_id",
                    (list(ids),))
        history = dict(cur.fetchall())
    return {i: (docs[i], history.get(i, 0)) for i in docs}


def test_an_offline_device_killed_while_sending_delivers_every_report_and_photo_once(tmp_path):
    key = new_agency()
    device = signed_in(tmp_path, new_user(agency=key))
    device.run("offline")
    ids = device.run("file-report", "--count", "150")["ids"]
    filed = device.run("file-report", "--count", "50", "--photos", "1", "--photo-size", "30000")
    ids += filed["ids"]
    photos = filed["photos"]
    assert len(set(ids)) == 200 and len(set(photos)) == 50
    refused = device.run("sync", ok=False)
    assert refused.returncode == 1 and "offline" in refused.stderr
    status = device.status()
    assert status["pending"] == 250 and status["online"] is False and len(status["uploads"]) == 50
    assert server_reports(ids) == {}

    device.run("online")
    # Killed after the first push left and its answer came back, before the device recorded it.
    died = device.run("sync", "--batch", "40", "--die-after-push", ok=False)
    assert died.returncode == -signal.SIGKILL
    assert len(server_reports(ids)) == 40
    assert device.status()["pending"] == 250

    # Killed again at an arbitrary moment of a longer send.
    sending = device.start("sync", "--batch", "10", "--pause", "0.1")
    deadline = time.monotonic() + 120
    while len(server_reports(ids)) < 80 and time.monotonic() < deadline and sending.poll() is None:
        time.sleep(0.05)
    sending.send_signal(signal.SIGKILL)
    sending.wait()
    assert 80 <= len(server_reports(ids)) <= 200
    left = device.status()["pending"]
    assert 0 < left <= 210  # the killed send had recorded the first answers (duplicates of the first kill)

    # Every record sent, and killed once more after the 20th photo's upload was answered.
    died = device.run("sync", "--batch", "50", "--die-after-uploads", "20", ok=False)
    assert died.returncode == -signal.SIGKILL
    status = device.status()
    assert status["pending"] == 0 and len(status["uploads"]) == 31  # the 20th was stored, not recorded

    report = device.run("sync")
    assert report["rejections"] == [] and report["pushed"] == 0
    assert report["photos"]["uploaded"] == 31 and report["photos"]["refused"] == []
    status = device.status()
    assert status["pending"] == 0 and status["rejections"] == [] and status["lastError"] is None
    assert status["uploads"] == []
    on_server = server_reports(ids)
    assert sorted(on_server) == sorted(ids)
    # Exactly once: a single history entry (the insert) per report.
    assert {history for _, history in on_server.values()} == {1}
    # The device's copy is the server's.
    sample = ids[123]
    assert device.get("reports", sample)["doc"] == on_server[sample][0]
    assert device.get("reports", sample)["state"] == "synced"
    # Every photo stored once: its blob, its own bytes, and the document pointing at it.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select photo_id, sha256, bytes from app.photo_blobs where photo_id = any(%s)", (photos,))
        blobs = {pid: (digest, size) for pid, digest, size in cur.fetchall()}
        cur.execute("select count(*) from sync.photos where id = any(%s) and doc->>'pictureURL' = '/api/v1/blobs/' || id",
                    (photos,))
        assert cur.fetchone()[0] == 50
    assert sorted(blobs) == sorted(photos) and len({d for d, _ in blobs.values()}) == 50
    for digest, size in blobs.values():
        assert os.path.getsize(os.path.join(STATE, "blobs", digest[:2], digest[2:4], digest)) == size == 30000
    out = tmp_path / "photo.jpg"
    assert device.run("photo", photos[7], "--out", str(out))["bytes"] == 30000
    assert hashlib.sha256(out.read_bytes()).hexdigest() == blobs[photos[7]][0]
    # A second download is revalidated with the ETag (304) and served from the cache.
    assert device.run("photo", photos[7], "--out", str(out))["bytes"] == 30000


def test_an_offline_edit_and_an_office_edit_of_other_fields_both_survive(tmp_path):
    key = new_agency()
    p = f"agency={key}"
    email = new_user(agency=key)
    device = signed_in(tmp_path, email)
    [rid] = device.run("file-report", "--vessel", "Amani")["ids"]
    device.run("sync")
    device.run("offline")
    queued = device.run("edit", "reports", rid, "--patch", '{"vessel": {"name": "Bahari"}, "draft": true}')["queued"]
    # Only the changed fields travel.
    assert queued["patch"] == {"vessel": {"name": "Bahari"}, "draft": True}

    office = Client(new_user(agency=key))
    results = office.push([
        {"changeId": "o1", "collection": "reports", "partition": p, "id": rid, "op": "update",
         "patch": {"vessel": {"homePort": "Office Port"}, "captain": {"name": "Office Captain"}}},
    ])
    assert [r["status"] for r in results] == ["applied"]
    # The same field, edited on the device after the office did: the later write wins.
    device.run("edit", "reports", rid, "--patch", '{"captain": {"name": "Device Captain"}}')
    assert device.status()["pending"] == 2

    device.run("online")
    device.run("sync")
    [(server_doc, history)] = server_reports([rid]).values()
    assert server_doc["vessel"]["name"] == "Bahari" and server_doc["vessel"]["homePort"] == "Office Port"
    assert server_doc["captain"]["name"] == "Device Captain" and server_doc["draft"] is True
    local = device.get("reports", rid)
    assert local["doc"] == server_doc and local["state"] == "synced"


def test_a_rejected_change_restores_the_servers_version_and_is_reported(tmp_path):
    device = signed_in(tmp_path, new_user(agency=new_agency()))
    [rid] = device.run("file-report", "--vessel", "Amani")["ids"]
    device.run("sync")
    device.run("edit", "reports", rid, "--patch", '{"vessel": {"name": 42}}')
    assert device.get("reports", rid)["doc"]["vessel"]["name"] == 42
    report = device.run("sync")
    [rejection] = report["rejections"]
    assert rejection["code"] == "invalid" and rejection["path"] == "/vessel/name" and rejection["id"] == rid
    local = device.get("reports", rid)
    assert local["doc"]["vessel"]["name"] == "Amani"
    assert local["state"] == "rejected" and local["rejection"]["code"] == "invalid"
    assert device.status()["rejections"][0]["changeId"] == rejection["changeId"]


def test_an_officer_moved_to_another_agency_loses_the_old_agencys_documents(tmp_path):
    old, new = new_agency(), new_agency()
    email = new_user(agency=old)
    device = signed_in(tmp_path, email)
    device.run("file-report", "--count", "3")
    device.run("sync")
    assert device.status()["documents"]["reports"] == 3
    device.run("offline")
    [unsent] = device.run("file-report")["ids"]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set agency = %s where id = %s", (new, user_id(email)))
    device.run("online")
    report = device.run("sync")
    assert f"agency={old}" in report["forbidden"]
    status = device.status()
    assert status["documents"].get("reports", 0) == 0 and status["pending"] == 0
    assert [n["kind"] for n in status["notices"]] == ["forbidden"]
    assert {(p["partition"], p["status"]) for p in status["partitions"]} >= {(f"agency={old}", "forbidden")}
    # The unsent report is not dropped silently: it is reported.
    assert [(r["id"], r["code"]) for r in status["rejections"]] == [(unsent, "forbidden")]


def test_a_compacted_partition_is_pulled_again_keeping_unsent_changes(tmp_path):
    key = new_agency()
    p = f"agency={key}"
    device = signed_in(tmp_path, new_user(agency=key))
    ids = device.run("file-report", "--count", "3")["ids"]
    device.run("sync")
    office = Client(new_user(agency=key))
    results = office.push([{"changeId": "d1", "collection": "reports", "partition": p, "id": ids[0], "op": "delete"}])
    assert results[0]["status"] == "applied"
    device.run("offline")
    device.run("edit", "reports", ids[1], "--patch", '{"vessel": {"name": "Kept"}}')
    [unsent] = device.run("file-report")["ids"]
    compacted = subprocess.run([os.path.join(REPO, ".build/release/tideway"), "compact", "--database",
                                os.environ["TIDEWAY_TEST_ADMIN_DATABASE"], "--older-than", "0s"],
                               capture_output=True, text=True)
    assert compacted.returncode == 0, compacted.stderr
    device.run("online")
    report = device.run("sync")
    assert p in report["reset"]
    status = device.status()
    assert [n["kind"] for n in status["notices"]] == ["reset"]
    assert status["pending"] == 0
    on_server = server_reports(ids + [unsent])
    assert sorted(on_server) == sorted(ids[1:] + [unsent])
    assert on_server[ids[1]][0]["vessel"]["name"] == "Kept"
    assert sorted(device.run("list", "reports")["ids"]) == sorted(ids[1:] + [unsent])
    assert device.get("reports", ids[0]) is None


def test_tokens_are_refreshed_once_and_logout_signs_out(tmp_path):
    email = new_user(agency=new_agency())
    device = signed_in(tmp_path, email)
    tokens = os.path.join(device.folder, "tokens.json")
    assert os.stat(tokens).st_mode & 0o777 == 0o600
    with open(tokens) as f:
        before = json.load(f)
    # An access token the server no longer takes: the device refreshes (rotation) and goes on.
    before_bad = dict(before, accessToken="not-a-token")
    with open(tokens, "w") as f:
        json.dump(before_bad, f)
    device.run("sync")
    with open(tokens) as f:
        after = json.load(f)
    assert after["refreshToken"] != before["refreshToken"] and after["accessToken"] != "not-a-token"
    # Two requests at once see the 401 (the event stream and the first pull of `watch`): one
    # refresh serves both. A second would present a spent refresh token, and the server would
    # then revoke every token of the login.
    with open(tokens, "w") as f:
        json.dump(dict(after, accessToken="not-a-token"), f)
    watching = Watching(device, seconds=5)
    try:
        watching.next(lambda e: e["event"] == "open")
        watching.next(lambda e: e["event"] == "synced")
    finally:
        watching.stop()
    assert device.run("sync")["rejections"] == []
    with open(tokens) as f:
        assert json.load(f)["refreshToken"] != after["refreshToken"]
    device.run("logout")
    assert not os.path.exists(tokens)
    assert device.status() == {"signedIn": False}
    # Logout ended the login on the server: its refresh token is refused.
    spent = requests.post(URL + "/api/v1/auth/refresh", json={"refreshToken": after["refreshToken"]}, verify=CA, timeout=30)
    assert spent.status_code == 401


class Watching:
    """`tideway-device watch` in the background, its JSON lines read on a thread."""

    def __init__(self, device, *args, seconds=60):
        import queue
        import threading
        self.lines = queue.Queue()
        self.process = device.start("watch", "--seconds", str(seconds), *args)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def next(self, predicate, timeout=30):
        import queue
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                event = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            seen.append(event)
            if predicate(event):
                return event
        raise AssertionError(f"no such event; saw {seen}")

    def stop(self):
        self.process.kill()
        self.process.wait()


@pytest.mark.parametrize("blocked", [False, True], ids=["event stream", "long polls"])
def test_a_back_office_change_reaches_a_connected_device(tmp_path, blocked):
    key = new_agency()
    p = f"agency={key}"
    device = signed_in(tmp_path, new_user(agency=key), partitions=[p])  # no other partition's events
    [rid] = device.run("file-report", "--vessel", "Amani")["ids"]
    device.run("sync")
    watching = Watching(device, *(["--block-events"] if blocked else []))
    try:
        # Both, in either order: the first sync, and the stream opened (or refused).
        wanted = {"down" if blocked else "open", "synced"}
        while wanted:
            wanted.discard(watching.next(lambda e: e["event"] in wanted)["event"])
        office = Client(new_user(agency=key))
        latencies, vias = [], []
        for n in range(3):
            time.sleep(0.3)
            sent = time.time()
            results = office.push([{"changeId": f"w{n}", "collection": "reports", "partition": p, "id": rid, "op": "update",
                                    "patch": {"vessel": {"homePort": f"Port {n}"}}}])
            assert results[0]["status"] == "applied"
            event = watching.next(lambda e: e["event"] == "synced" and e["pulled"] > 0 and e["at"] >= sent)
            # On the stream, the event carries the change (applied, no pull) once the
            # partition has had an event since the publisher started; before that it pulls.
            assert event["via"] in (("poll",) if blocked else ("events", "carried"))
            vias.append(event["via"])
            latencies.append(event["at"] - sent)
            assert device.get("reports", rid)["doc"]["vessel"]["homePort"] == f"Port {n}"
        assert blocked or "carried" in vias[1:], vias
        print(f"\nback office -> device store via {'long polls' if blocked else ', '.join(vias)}: "
              f"{', '.join(f'{1000 * s:.0f} ms' for s in latencies)}")
    finally:
        watching.stop()


def test_two_devices_chat_and_unread_counts_and_presence_end_right_on_both(tmp_path):
    a_email, b_email = new_user(agency=None), new_user(agency=None)
    a, b = signed_in(tmp_path, a_email, "a"), signed_in(tmp_path, b_email, "b")
    a.run("chat", "sync")
    b.run("chat", "sync")
    cid = a.run("chat", "create", "Harbour", "--member", b_email)["conversation"]
    a.run("chat", "send", cid, "one")
    a.run("chat", "send", cid, "two")
    a.run("chat", "sync")
    b.run("chat", "sync")  # b learns of the conversation and opens it
    b.run("chat", "send", cid, "three")
    b.run("chat", "sync")
    a.run("chat", "sync")

    def conversation(device):
        shown = device.run("chat", "show")
        [conv] = [c for c in shown["conversations"] if c["id"] == cid]
        return shown, conv

    shown_a, conv_a = conversation(a)
    shown_b, conv_b = conversation(b)
    assert [m["text"] for m in conv_a["messages"]] == [m["text"] for m in conv_b["messages"]] == ["one", "two", "three"]
    assert [m["author"] for m in conv_b["messages"]] == [a_email, a_email, b_email]
    assert (conv_a["unreadCount"], conv_b["unreadCount"]) == (1, 2)
    # b reads: its count goes to 0, a's stays.
    b.run("chat", "read", cid)
    b.run("chat", "sync")
    a.run("chat", "sync")
    assert conversation(b)[1]["unreadCount"] == 0 and conversation(a)[1]["unreadCount"] == 1
    # Both synced just now: each is On-Line, and each device sees the other On-Line.
    a.run("chat", "sync")
    shown_a, _ = conversation(a)
    shown_b, _ = conversation(b)
    assert shown_a["presence"] == shown_b["presence"] == "On-Line"
    assert shown_a["chatsters"][b_email] == shown_b["chatsters"][a_email] == "On-Line"
