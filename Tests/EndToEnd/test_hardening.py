"""Defects found from the attacker's side and under faults (issue 20), each pinned by a test
that failed on the code before its fix. Tests whose fix is still to come are marked
`xfail(strict=True)`: they run, must fail, and turn red the day the fix lands (then drop the
marker). The change-event ones (defects 2 and 3) are in test_events_restart.py, nginx's own
errors (6) in test_nginx_errors.py, contract and behaviour (7) in test_contract_agreement.py."""
import glob
import json
import os
import time
import uuid

import pytest

from conftest import PASSWORD, STATE, URL, admin_db, api, error_of, fastcgi, login_failures_taken_back, new_user, \
    session
from synclib import Client, change, doc_for, new_agency
from test_web_session import login_page, set_cookie_headers, sign_in

SOURCES_FIX = "issue 20: the fix is in Sources/, after the layered targets land (arch-landed)"


# Defect 1: header injection through `next` on sign-in.

INJECTED_TARGETS = [
    "/\r\nSet-Cookie: injected=1",
    "/\r\n\r\n<html>body</html>",
    "/\n\nX-Injected: 1",
    "/\t/evil.example",
    "/\x00/evil.example",
    "/\x0b/evil.example",
]


@pytest.mark.parametrize("target", INJECTED_TARGETS, ids=repr)
def test_next_with_control_characters_is_never_a_redirect_target(target):
    r = sign_in(session(), new_user(), next_path=target)
    assert r.status_code == 303, r.text
    assert r.headers["Location"] == "/", r.headers
    cookies = set_cookie_headers(r)
    assert not any("injected" in c for c in cookies), cookies
    # The session cookie is a header, not pushed into the body.
    assert any(c.startswith("tw_session=") for c in cookies), cookies
    assert "x-injected" not in {k.lower() for k in r.headers}
    assert "tw_session" not in r.text
    # The sign-in form does not carry such a target either.
    assert login_page(session(), "/login?next=" + requests_quote(target))["next"] == "/"


def requests_quote(text):
    import urllib.parse
    return urllib.parse.quote(text, safe="")


# Defect 4: one oversized string fails only its change.

def test_a_2_mib_string_is_that_changes_too_large_and_the_others_are_applied():
    officer = Client("gabon.officer1@demo.tideway")
    big_id, small_id = f"big-{uuid.uuid4().hex}", f"small-{uuid.uuid4().hex}"
    big = change("insert", "reports", "agency=Gabon", big_id,
                 {**doc_for("reports", big_id), "notes": [{"note": "x" * (2 * 1024 * 1024)}]})
    small = change("insert", "reports", "agency=Gabon", small_id, doc_for("reports", small_id))
    r = officer.push_raw([big, small])
    assert r.status_code == 200, r.text[:300]
    results = r.json()["results"]
    assert results[0]["status"] == "rejected" and results[0]["error"]["code"] == "too_large", results[0]
    assert results[1]["status"] == "applied", results[1]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id from sync.reports where id in (%s, %s)", (big_id, small_id))
        assert [row[0] for row in cur.fetchall()] == [small_id]


# Defect 5: every temp file the server makes is swept.

def test_stale_thumbnail_and_upload_temps_are_swept():
    from patrol_support import BLOB_ROOT, tideway
    folder = os.path.join(BLOB_ROOT, "tmp")
    os.makedirs(folder, exist_ok=True)
    stale = [os.path.join(folder, name) for name in
             (f"thumb-{uuid.uuid4().hex[:16]}.jpg", f"thumb-{uuid.uuid4().hex[:16]}",
              f"upload-{uuid.uuid4().hex[:24]}")]
    fresh = os.path.join(folder, f"thumb-{uuid.uuid4().hex[:16]}.jpg")
    two_hours_ago = time.time() - 7200
    for path in stale + [fresh]:
        with open(path, "wb") as f:
            f.write(b"\xff\xd8\xff\xe0partial")
    for path in stale:
        os.utime(path, (two_hours_ago, two_hours_ago))
    try:
        tideway("sweep-blobs")
        assert [p for p in stale if os.path.exists(p)] == []
        # A temp file in use (recent) is left alone.
        assert os.path.exists(fresh)
    finally:
        for path in stale + [fresh]:
            if os.path.exists(path):
                os.unlink(path)


# Defect 8: sign-in lockout.

def worker_socket():
    return sorted(glob.glob(os.path.join(STATE, "run", "worker-*.sock")))[0]


def sign_in_from(address, email, password):
    """An API sign-in as if from `address` (straight to a worker, which reads REMOTE_ADDR)."""
    body = json.dumps({"email": email, "password": password}).encode()
    status, _, _ = fastcgi(worker_socket(), "POST", "/api/v1/auth/login",
                           headers={"Content-Type": "application/json"}, body=body, remote_addr=address)
    return status


def test_failures_from_elsewhere_never_lock_out_the_right_password():
    email = new_user()
    with login_failures_taken_back("%"):
        # Someone who knows the address tries 12 passwords from another address.
        for attempt in range(12):
            assert sign_in_from("198.51.100.7", email, f"guess-{attempt}") in (401, 429)
        # The owner, from their own address, with the right password, is let in.
        assert sign_in_from("203.0.113.20", email, PASSWORD) == 200


def test_failures_of_others_behind_one_address_never_lock_out_the_right_password():
    victim = new_user()
    with login_failures_taken_back("%"):
        # One office NAT: 35 failures of other people (other accounts) from the same address.
        for attempt in range(35):
            assert sign_in_from("192.0.2.44", f"someone-{attempt}@test.tideway", "wrong") in (401, 429)
        assert sign_in_from("192.0.2.44", victim, PASSWORD) == 200


def test_brute_force_on_one_account_from_one_address_is_slowed_down():
    """Holds before and after the fix: guessing stays throttled."""
    email = new_user()
    with login_failures_taken_back("%"):
        statuses = [sign_in_from("198.51.100.99", email, f"guess-{attempt}") for attempt in range(12)]
        assert statuses[0] == 401 and 429 in statuses, statuses


# Defect 9: an id taken in another agency, and log noise for revoked tokens.

def test_an_id_taken_in_another_agency_is_refused_like_any_refused_insert():
    taken = f"taken-{uuid.uuid4().hex}"
    Client("gabon.officer1@demo.tideway").push([change("insert", "reports", "agency=Gabon", taken,
                                                       doc_for("reports", taken))])
    key = new_agency()
    stranger = Client(new_user(agency=key))
    result = stranger.push([change("insert", "reports", f"agency={key}", taken, doc_for("reports", taken))])[0]
    assert result["status"] == "rejected"
    # The same answer the global admin (who may see both) gets for an id of another partition:
    # nothing in it says whether the caller could read the other document.
    admin = Client("admin@demo.tideway")
    seen = admin.push([change("insert", "reports", "agency=WildAid", taken, doc_for("reports", taken))])[0]
    assert seen["status"] == "rejected"
    assert result["error"] == seen["error"], (result, seen)
    # The same through the batch insert of new documents (app.insert_documents), next to a
    # free id that goes in, and nothing of the other agency's document changed.
    free = f"free-{uuid.uuid4().hex}"
    batch = stranger.push([change("insert", "reports", f"agency={key}", free, doc_for("reports", free)),
                           change("insert", "reports", f"agency={key}", taken, doc_for("reports", taken))])
    assert batch[0]["status"] == "applied", batch
    assert batch[1]["status"] == "rejected" and batch[1]["error"] == seen["error"], batch
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select partition, version from sync.reports where id = %s", (taken,))
        assert cur.fetchall() == [("agency=Gabon", 1)]


def test_a_revoked_token_logs_no_presence_error():
    officer = Client(new_user())
    assert api("POST", "/api/v1/auth/logout", officer.token).status_code == 204
    logs = sorted(glob.glob(os.path.join(STATE, "log", "worker-*.log")))
    sizes = {path: os.path.getsize(path) for path in logs}
    for _ in range(4):
        error_of(api("GET", "/api/v1/me", officer.token), 401, "unauthenticated")
        error_of(api("POST", "/api/v1/sync/pull", officer.token, json={"partitions": {}}), 401, "unauthenticated")
    time.sleep(0.5)
    written = ""
    for path in logs:
        with open(path, errors="replace") as f:
            f.seek(sizes[path])
            written += f.read()
    assert "presence not updated" not in written, written[-2000:]
    assert "28000" not in written, written[-2000:]


def failed_sign_in_over(host, forwarded_for):
    """One failed API sign-in through nginx over `host` (127.0.0.1 is a trusted proxy in the
    test stack, ::1 is not), claiming X-Forwarded-For: `forwarded_for`."""
    import socket
    import ssl
    import urllib.parse
    from conftest import CA
    port = urllib.parse.urlsplit(URL).port
    body = json.dumps({"email": f"nobody-{uuid.uuid4().hex[:8]}@test.tideway", "password": "wrong"}).encode()
    request = (f"POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
               f"X-Forwarded-For: {forwarded_for}\r\n\r\n").encode() + body
    context = ssl.create_default_context(cafile=CA)
    with socket.create_connection((host, port), timeout=10) as plain, \
            context.wrap_socket(plain, server_hostname="localhost") as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.split(b" ", 2)[1] == b"401", answer[:200]


def failures_naming(address):
    """How many sign-in failures the server counted under a key naming this address."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.login_failures where key like %s and key not like 'email:%%'",
                    ("%" + address + "%",))
        return cur.fetchone()[0]


def test_the_client_address_comes_from_a_trusted_proxys_header_only():
    with login_failures_taken_back("address:%"), login_failures_taken_back("pair:%"), \
            login_failures_taken_back("email:nobody-%"):
        before = failures_naming("203.0.113.77")
        failed_sign_in_over("127.0.0.1", "203.0.113.77")
        assert failures_naming("203.0.113.77") == before + 1
        if not any(line.rstrip().endswith(" lo") and line.startswith("0" * 31 + "1")
                   for line in open("/proc/net/if_inet6")):
            pytest.skip("no IPv6 loopback: cannot reach nginx from an untrusted address")
        before, elsewhere = failures_naming(":::1"), failures_naming("203.0.113.78")
        failed_sign_in_over("::1", "203.0.113.78")
        assert failures_naming("203.0.113.78") == elsewhere
        assert failures_naming(":::1") == before + 1
