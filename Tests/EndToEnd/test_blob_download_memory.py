"""Photo downloads answered from the worker's memory (issue 22, docs/sync-protocol.md
"Blobs"): the same answer as PostgreSQL's, and never after a change that could make it
wrong — the photo deleted, moved or given other bytes, the token or the caller's reach
ended, whichever path made it (the API, an operator's SQL) — nor while the worker's
listening connection is down; each checked at once, without sleeping.

Whether an answer came from memory is told from the attacker's side of the database: with
EXECUTE on app.blob_for_download taken from the workers' role, every download PostgreSQL
would answer fails, so a 200 can only have come from memory."""
import time

import pytest

from conftest import URL, admin_db, workers_refused, api, error_of, new_user, token
from patrol_support import fake_jpeg, new_photo, push_one, sha
from synclib import new_agency
from test_sync_idle_memory import listeners

DOWNLOAD = "app.blob_for_download(bytea, text)"


def database_refuses_downloads():
    return workers_refused(DOWNLOAD)


def get(tok, pid, **kwargs):
    return api("GET", f"/api/v1/blobs/{pid}", tok, **kwargs)


def officer_with_photo():
    """A fresh agency's officer, the photo they stored and its bytes."""
    key = new_agency()
    email = new_user(agency=key)
    tok = token(email)
    pid = new_photo(tok, partition=f"agency={key}")
    data = fake_jpeg()
    r = api("PUT", f"/api/v1/blobs/{pid}", tok, data=data, headers={"Content-Type": "image/jpeg"})
    assert r.status_code == 200, r.text
    return email, key, tok, pid, data


def remembered(tok, pid, data):
    """Downloads until every worker answered one from PostgreSQL, then proves the answer now
    comes from memory: the same while PostgreSQL refuses downloads. Each download is a new
    client connection, which nginx gives to a worker by its number's hash (`hash $connection`):
    8 of them all went to one worker about once in 128 runs; 40 miss one with odds 2^-39."""
    for _ in range(40):
        assert get(tok, pid).content == data
    with database_refuses_downloads():
        for _ in range(8):
            r = get(tok, pid)
            assert r.status_code == 200, "a download should have been answered from memory"
            assert r.content == data and r.headers["ETag"] == f'"{sha(data)}"'
            assert r.headers["Content-Type"] == "image/jpeg" and r.headers["Cache-Control"] == "private"
        r = get(tok, pid, headers={"If-None-Match": f'"{sha(data)}"'})
        assert r.status_code == 304 and r.headers["ETag"] == f'"{sha(data)}"'


def not_from_memory(tok, pid):
    """With PostgreSQL refusing downloads, no download of the photo by this token succeeds."""
    with database_refuses_downloads():
        for _ in range(4):
            assert get(tok, pid).status_code != 200, "answered from memory"


def test_a_download_is_answered_from_memory_once_seen():
    _, _, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)


def test_another_agencys_photo_is_never_answered_from_memory():
    _, _, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)
    _, _, stranger, theirs, their_data = officer_with_photo()
    remembered(stranger, theirs, their_data)
    # Both the token and the photo are known to the workers; together they are not.
    not_from_memory(stranger, pid)
    error_of(get(stranger, pid), 404, "not_found")


def test_a_deleted_photo_is_refused_at_once():
    _, key, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)
    assert push_one(tok, collection="photos", partition=f"agency={key}", id=pid, op="delete")["status"] == "applied"
    error_of(get(tok, pid), 404, "not_found")
    not_from_memory(tok, pid)


@pytest.mark.parametrize("statement", [
    "update app.photo_blobs set partition = 'agency=WildAid' where photo_id = %(pid)s",
    "update sync.photos set partition = 'agency=WildAid' where id = %(pid)s",
    "delete from app.photo_blobs where photo_id = %(pid)s",
    "delete from sync.photos where id = %(pid)s",
])
def test_a_photo_moved_out_of_reach_by_sql_is_refused_at_once(statement):
    _, _, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(statement, {"pid": pid})
    error_of(get(tok, pid), 404, "not_found")


def test_new_bytes_for_a_photo_are_served_at_once():
    _, _, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)
    fresh = fake_jpeg()
    r = api("PUT", f"/api/v1/blobs/{pid}", tok, data=fresh, headers={"Content-Type": "image/jpeg"})
    assert r.status_code == 200, r.text
    r = get(tok, pid)
    assert r.content == fresh and r.headers["ETag"] == f'"{sha(fresh)}"'


def test_logout_refuses_downloads_at_once():
    _, _, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)
    assert api("POST", "/api/v1/auth/logout", tok).status_code == 204
    error_of(get(tok, pid), 401, "unauthenticated")


@pytest.mark.parametrize("statement", [
    "update app.users set active = false where email = %(email)s",
    "update app.logins set revoked_at = now() where user_id = (select id from app.users where email = %(email)s)",
    "update app.tokens set expires_at = now() - interval '1 second' where login_id in "
    "(select l.id from app.logins l join app.users u on u.id = l.user_id where u.email = %(email)s)",
])
def test_every_way_a_token_ends_refuses_downloads_at_once(statement):
    email, _, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(statement, {"email": email})
    error_of(get(tok, pid), 401, "unauthenticated")


def test_an_agency_move_refuses_the_old_agencys_photos_at_once():
    email, _, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set agency = 'WildAid' where email = %s", (email,))
    error_of(get(tok, pid), 404, "not_found")


def test_no_memory_answers_while_the_listener_is_down_and_again_once_it_is_back():
    email, _, tok, pid, data = officer_with_photo()
    remembered(tok, pid, data)
    killed = listeners()
    assert len(killed) >= 1
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select pg_terminate_backend(pid) from unnest(%s::int[]) as pid", (killed,))
    not_from_memory(tok, pid)
    # Back (each worker reconnects within a second): remembered anew from PostgreSQL.
    for _ in range(100):
        if set(listeners()) - set(killed) and len(listeners()) >= len(killed):
            break
        time.sleep(0.1)
    remembered(tok, pid, data)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set active = false where email = %s", (email,))
    error_of(get(tok, pid), 401, "unauthenticated")
