"""The blob store (sync-protocol.md, Blobs): uploads only for those who may write the
photo, checked by magic bytes, whole or not at all; downloads authorized by the worker and
sent by nginx with the content's SHA-256 as ETag; identical photos stored once; deleted
photos' blobs swept."""
import os
import socket
import ssl
import uuid
from urllib.parse import urlparse

import pytest

from conftest import CA, URL, admin_db, api, error_of, login, new_user, token
from patrol_support import (all_blob_files, blob_path, fake_jpeg, new_photo, push_one, sha, temp_files, tideway,
                            wait_for)


@pytest.fixture(scope="module")
def gabon():
    return token("gabon.officer1@demo.tideway")


@pytest.fixture(scope="module")
def wildaid():
    return token("wildaid.officer1@demo.tideway")


def put(tok, pid, data, content_type="image/jpeg"):
    return api("PUT", f"/api/v1/blobs/{pid}", tok, data=data, headers={"Content-Type": content_type})


def photo_doc(pid):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select doc, version from sync.photos where id = %s", (pid,))
        return cur.fetchone()


def test_upload_then_download_through_nginx(gabon):
    pid = new_photo(gabon)
    data = fake_jpeg(300_000)
    r = put(gabon, pid, data)
    assert r.status_code == 200, r.text
    assert r.json() == {"photoId": pid, "sha256": sha(data), "bytes": len(data), "contentType": "image/jpeg",
                        "pictureURL": f"/api/v1/blobs/{pid}"}
    assert open(blob_path(sha(data)), "rb").read() == data
    doc, version = photo_doc(pid)
    assert doc["pictureURL"] == f"/api/v1/blobs/{pid}" and version == 2

    r = api("GET", f"/api/v1/blobs/{pid}", gabon)
    assert r.status_code == 200
    assert r.content == data
    assert r.headers["Content-Type"] == "image/jpeg"
    assert r.headers["ETag"] == f'"{sha(data)}"'
    assert r.headers["Cache-Control"] == "private"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert "X-Accel-Redirect" not in r.headers

    r = api("GET", f"/api/v1/blobs/{pid}", gabon, headers={"If-None-Match": f'"{sha(data)}"'})
    assert r.status_code == 304 and r.content == b""
    assert r.headers["ETag"] == f'"{sha(data)}"'
    r = api("GET", f"/api/v1/blobs/{pid}", gabon, headers={"If-None-Match": '"something-else"'})
    assert r.status_code == 200 and r.content == data


def test_upload_is_idempotent(gabon):
    pid = new_photo(gabon)
    data = fake_jpeg()
    assert put(gabon, pid, data).status_code == 200
    assert put(gabon, pid, data).status_code == 200
    assert photo_doc(pid)[1] == 2  # the document was written once
    assert all_blob_files().count(sha(data)) == 1


def test_identical_photos_are_stored_once(gabon):
    data = fake_jpeg()
    before = len(all_blob_files())
    for _ in range(3):
        assert put(gabon, new_photo(gabon), data).status_code == 200
    assert len(all_blob_files()) == before + 1


@pytest.mark.parametrize("who", ["wildaid.officer1@demo.tideway", "admin@demo.tideway"])
def test_upload_by_someone_who_cannot_write_the_partition_is_403_and_writes_no_file(gabon, who):
    pid = new_photo(gabon)
    data = fake_jpeg()
    r = put(token(who), pid, data)
    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "forbidden"
    assert not os.path.exists(blob_path(sha(data)))
    assert temp_files() == []
    assert "pictureURL" not in photo_doc(pid)[0]


def test_upload_for_an_unknown_photo_is_403(gabon):
    assert put(gabon, str(uuid.uuid4()), fake_jpeg()).status_code == 403


def test_content_type_must_be_an_image_and_match_the_bytes(gabon):
    pid = new_photo(gabon)
    data = fake_jpeg()
    r = put(gabon, pid, data, "text/plain")
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
    r = put(gabon, pid, data, "image/png")
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid"
    r = put(gabon, pid, b"GIF89a" + os.urandom(100), "image/jpeg")
    assert r.status_code == 422
    assert not os.path.exists(blob_path(sha(data)))
    assert temp_files() == []
    assert api("GET", f"/api/v1/blobs/{pid}", gabon).status_code == 404


def test_too_large_is_refused(gabon):
    pid = new_photo(gabon)
    r = put(gabon, pid, b"\xff\xd8\xff" + bytes(16 * 1024 * 1024))
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "too_large"
    assert temp_files() == []


def test_a_partial_upload_leaves_no_blob(gabon):
    pid = new_photo(gabon)
    data = fake_jpeg(200_000)
    url = urlparse(URL)
    context = ssl.create_default_context(cafile=CA)
    with socket.create_connection((url.hostname, url.port)) as raw:
        with context.wrap_socket(raw, server_hostname=url.hostname) as s:
            s.sendall((f"PUT /api/v1/blobs/{pid} HTTP/1.1\r\nHost: {url.hostname}\r\nAuthorization: Bearer {gabon}\r\n"
                       f"Content-Type: image/jpeg\r\nContent-Length: {len(data)}\r\n\r\n").encode())
            s.sendall(data[:len(data) // 2])
    # Whatever got through, nothing is stored: no row, no document change, no file, no temp.
    assert wait_for(lambda: temp_files() == [], timeout=5)
    assert api("GET", f"/api/v1/blobs/{pid}", gabon).status_code == 404
    assert not os.path.exists(blob_path(sha(data)))
    assert not os.path.exists(blob_path(sha(data[:len(data) // 2])))
    assert photo_doc(pid)[1] == 1


def test_another_agencys_blob_is_not_found(gabon, wildaid):
    pid = new_photo(gabon)
    assert put(gabon, pid, fake_jpeg()).status_code == 200
    r = api("GET", f"/api/v1/blobs/{pid}", wildaid)
    assert r.status_code in (403, 404)
    assert r.content.startswith(b"{")  # the error, never the bytes
    assert api("GET", f"/api/v1/blobs/{pid}").status_code == 401
    # A global admin may read every agency.
    assert api("GET", f"/api/v1/blobs/{pid}", token("admin@demo.tideway")).status_code == 200


def test_a_download_is_refused_at_once_when_the_token_is_revoked(gabon):
    # Each download checks the token in the database: nothing about a caller is remembered
    # between downloads, so the very next one after a sign-out is refused.
    pid = new_photo(gabon)
    data = fake_jpeg()
    assert put(gabon, pid, data).status_code == 200
    officer = login(new_user())["accessToken"]
    assert api("GET", f"/api/v1/blobs/{pid}", officer).content == data
    assert api("POST", "/api/v1/auth/logout", officer).status_code == 204
    error_of(api("GET", f"/api/v1/blobs/{pid}", officer), 401, "unauthenticated")
    error_of(api("GET", f"/api/v1/blobs/{pid}", "not-a-token"), 401, "unauthenticated")


def test_a_download_is_refused_at_once_when_the_caller_or_the_photo_moves_out_of_reach(gabon):
    pid = new_photo(gabon)
    data = fake_jpeg()
    assert put(gabon, pid, data).status_code == 200
    email = new_user()
    officer = token(email)
    assert api("GET", f"/api/v1/blobs/{pid}", officer).content == data
    # The officer moves to another agency: the same token no longer reaches Gabon's photos.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set agency = 'WildAid' where email = %s", (email,))
    error_of(api("GET", f"/api/v1/blobs/{pid}", officer), 404, "not_found")
    # The photo is deleted: nobody gets its bytes any more, though the file may remain until the sweep.
    assert api("GET", f"/api/v1/blobs/{pid}", gabon).status_code == 200
    assert push_one(gabon, collection="photos", partition="agency=Gabon", id=pid, op="delete")["status"] == "applied"
    error_of(api("GET", f"/api/v1/blobs/{pid}", gabon), 404, "not_found")


def test_deleting_photos_sweeps_blobs_no_longer_referenced(gabon):
    shared, single = fake_jpeg(), fake_jpeg()
    a, b, c = new_photo(gabon), new_photo(gabon), new_photo(gabon)
    for pid, data in [(a, shared), (b, shared), (c, single)]:
        assert put(gabon, pid, data).status_code == 200
    for pid in (a, c):
        assert push_one(gabon, collection="photos", partition="agency=Gabon", id=pid, op="delete")["status"] == "applied"
    assert api("GET", f"/api/v1/blobs/{a}", gabon).status_code == 404
    out = tideway("sweep-blobs")
    assert "removed" in out.stdout
    assert os.path.exists(blob_path(sha(shared)))  # photo b still names it
    assert not os.path.exists(blob_path(sha(single)))
    assert api("GET", f"/api/v1/blobs/{b}", gabon).content == shared

    assert push_one(gabon, collection="photos", partition="agency=Gabon", id=b, op="delete")["status"] == "applied"
    tideway("sweep-blobs")
    assert not os.path.exists(blob_path(sha(shared)))


def test_deleting_a_report_deletes_its_photos_and_their_blobs(gabon):
    rid = str(uuid.uuid4())
    assert push_one(gabon, collection="reports", partition="agency=Gabon", id=rid, op="insert",
                    doc={"timestamp": "2026-03-01T10:00:00Z"})["status"] == "applied"
    mine, other = new_photo(gabon, referencingReportID=rid), new_photo(gabon, referencingReportID="another-report")
    data, kept = fake_jpeg(), fake_jpeg()
    assert put(gabon, mine, data).status_code == 200
    assert put(gabon, other, kept).status_code == 200
    assert push_one(gabon, collection="reports", partition="agency=Gabon", id=rid, op="delete")["status"] == "applied"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id, deleted from sync.photos where id in (%s, %s)", (mine, other))
        assert dict(cur.fetchall()) == {mine: True, other: False}
    tideway("sweep-blobs")
    assert not os.path.exists(blob_path(sha(data)))
    assert os.path.exists(blob_path(sha(kept)))
