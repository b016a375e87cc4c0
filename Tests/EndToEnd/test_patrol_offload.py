"""Offload (domain.md, server effect 8): a photo pushed with an inline picture has its bytes
moved to the blob store by the job queue; clients see `pictureURL` (and a thumbnail) in an
ordinary pull; a runner killed mid-offload loses no photo and duplicates none."""
import base64
import os
import signal
import subprocess
import time
import uuid

import pytest

from conftest import admin_db, api, token
from patrol_support import (TIDEWAY, all_blob_files, b64, blob_path, jpeg, pull_to_end, push_one, sha,  # noqa: F401
                            stack_runner_paused, tool_env, wait_for)  # (stack_runner_paused: a fixture)


@pytest.fixture(scope="module")
def gabon():
    return token("gabon.officer1@demo.tideway")


def jpeg_size(data):
    """Width and height from a JPEG's SOF marker."""
    i = 2
    while i < len(data):
        marker, length = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        i += 2 + length
    raise AssertionError("no SOF marker")


def photo_state(pid):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select doc, version from sync.photos where id = %s", (pid,))
        doc, version = cur.fetchone()
        cur.execute("select state, attempts from app.jobs where ref = %s order by id", (pid,))
        jobs = cur.fetchall()
        cur.execute("select sha256 from app.photo_blobs where photo_id = %s", (pid,))
        blobs = [r[0] for r in cur.fetchall()]
        return doc, version, jobs, blobs


def offloaded(pid):
    doc = photo_state(pid)[0]
    return "picture" not in doc and doc.get("pictureURL") and doc


def test_an_inline_picture_moves_to_the_blob_store_and_clients_see_it_in_a_pull(gabon):
    _, cursor = pull_to_end(gabon, "agency=Gabon")
    data = jpeg(640, 480)
    pid = str(uuid.uuid4())
    assert push_one(gabon, collection="photos", partition="agency=Gabon", id=pid, op="insert",
                    doc={"date": "2026-03-01T10:00:00Z", "picture": b64(data), "referencingReportID": "r-1"}
                    )["status"] == "applied"
    doc = wait_for(lambda: offloaded(pid))
    assert doc, photo_state(pid)
    changes, _ = pull_to_end(gabon, "agency=Gabon", cursor)
    pulled = [c["doc"] for c in changes if c["collection"] == "photos" and c["id"] == pid]
    assert pulled[-1] == doc
    assert doc["pictureURL"] == f"/api/v1/blobs/{pid}" and doc["referencingReportID"] == "r-1"
    thumb = base64.b64decode(doc["thumbNail"])
    assert thumb[:3] == b"\xff\xd8\xff" and max(jpeg_size(thumb)) == 128
    r = api("GET", doc["pictureURL"], gabon)
    assert r.status_code == 200 and r.content == data and r.headers["ETag"] == f'"{sha(data)}"'
    assert photo_state(pid)[2] == [("done", 1)]


def test_an_existing_thumbnail_is_kept(gabon):
    data, thumb = jpeg(200, 100), jpeg(64, 32)
    pid = str(uuid.uuid4())
    push_one(gabon, collection="photos", partition="agency=Gabon", id=pid, op="insert",
             doc={"date": "2026-03-01T10:00:00Z", "picture": b64(data), "thumbNail": b64(thumb)})
    doc = wait_for(lambda: offloaded(pid))
    assert doc and base64.b64decode(doc["thumbNail"]) == thumb


def test_pictures_longer_than_the_string_limit_are_accepted_other_strings_are_not(gabon):
    data = jpeg(1200, 900)
    assert 256 * 1024 < len(b64(data)) < 1024 * 1024, len(b64(data))
    pid = str(uuid.uuid4())
    result = push_one(gabon, collection="photos", partition="agency=Gabon", id=pid, op="insert",
                      doc={"date": "2026-03-01T10:00:00Z", "picture": b64(data)})
    assert result["status"] == "applied", result
    assert wait_for(lambda: offloaded(pid))
    result = push_one(gabon, collection="photos", partition="agency=Gabon", id=str(uuid.uuid4()), op="insert",
                      doc={"date": "2026-03-01T10:00:00Z", "referencingReportID": "x" * (300 * 1024)})
    assert result["status"] == "rejected" and result["error"]["code"] == "invalid"


def test_a_picture_that_is_no_image_fails_its_job_and_stays(gabon):
    pid = str(uuid.uuid4())
    push_one(gabon, collection="photos", partition="agency=Gabon", id=pid, op="insert",
             doc={"date": "2026-03-01T10:00:00Z", "picture": b64(b"not an image at all")})
    assert wait_for(lambda: photo_state(pid)[2] == [("failed", 1)])
    assert "picture" in photo_state(pid)[0]


def test_a_runner_killed_mid_offload_loses_no_photo_and_duplicates_none(gabon, stack_runner_paused):
    data = jpeg(800, 600)
    digest = sha(data)
    pid = str(uuid.uuid4())
    runner = subprocess.Popen([TIDEWAY, "jobs", "--pause-before-commit", "60"], env=tool_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        push_one(gabon, collection="photos", partition="agency=Gabon", id=pid, op="insert",
                 doc={"date": "2026-03-01T10:00:00Z", "picture": b64(data)})
        # Mid-offload: the bytes are in the blob store, the transaction is not committed.
        assert wait_for(lambda: os.path.exists(blob_path(digest)), timeout=30)
        time.sleep(0.3)
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()

    doc, version, jobs, blobs = photo_state(pid)
    assert doc["picture"] == b64(data) and "pictureURL" not in doc and version == 1
    assert jobs == [("pending", 1)] and blobs == []

    # A fresh runner takes the job again once its backoff has passed.
    def finished():
        subprocess.run([TIDEWAY, "jobs", "--once"], env=tool_env(), capture_output=True, check=True)
        return offloaded(pid)
    assert wait_for(finished, timeout=30, interval=0.5)
    doc, version, jobs, blobs = photo_state(pid)
    assert version == 2 and jobs == [("done", 2)] and blobs == [digest]
    assert all_blob_files().count(digest) == 1
    assert api("GET", f"/api/v1/blobs/{pid}", gabon).content == data


def test_the_sweep_forgets_done_jobs_after_a_week_and_keeps_failed_ones():
    refs = {name: f"retention-{name}-{uuid.uuid4().hex[:8]}" for name in ["old-done", "new-done", "old-failed"]}
    with admin_db() as conn, conn.cursor() as cur:
        for name, ref in refs.items():
            state, age = name.split("-")[1], "8 days" if name.startswith("old") else "1 hour"
            cur.execute("""insert into app.jobs (kind, partition, ref, state, attempts, finished_at)
                           values ('offload_photo', 'agency=Gabon', %s, %s, 1, now() - %s::interval)""", (ref, state, age))
    subprocess.run([TIDEWAY, "sweep-blobs"], env=tool_env(), capture_output=True, check=True)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select ref from app.jobs where ref = any(%s)", (list(refs.values()),))
        assert sorted(r[0] for r in cur.fetchall()) == sorted([refs["new-done"], refs["old-failed"]])
