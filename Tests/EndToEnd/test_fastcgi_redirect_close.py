"""A worker closes a FastCGI connection after an X-Accel-Redirect answer (a photo download,
an event stream) and keeps it after every other answer nginx asked it to keep
(Sources/FastCGI/FastCGIServer.swift). nginx never reuses a connection after such an
answer: it acts on the headers and closes it, so waiting on it for a next request only
cost the worker a wake-up and libfcgi's lingering close (docs/performance/round-06.md, "Blobs, sixth
round"). Talks to a worker's socket as nginx does (FCGI_KEEP_CONN), past nginx."""
import glob
import os
import socket

from conftest import STATE, api, fastcgi_answer, fastcgi_request, new_user, token
from patrol_support import fake_jpeg, new_photo, sha
from synclib import new_agency


def kept_connection():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(sorted(glob.glob(os.path.join(STATE, "run", "worker-*.sock")))[0])
    return s


def ask(s, path, tok=None, headers=None):
    headers = dict(headers or {})
    if tok:
        headers["Authorization"] = f"Bearer {tok}"
    s.sendall(fastcgi_request("GET", path, headers, keep=True))
    return fastcgi_answer(s)


def closed_by_worker(s):
    """Whether the worker has let the connection go: a next request gets no answer (the
    connection's end, or a reset if it arrived before the worker's close)."""
    try:
        s.sendall(fastcgi_request("GET", "/healthz", keep=True))
        return s.recv(65536) == b""
    except (BrokenPipeError, ConnectionResetError):
        return True


def officer_with_photo():
    key = new_agency()
    tok = token(new_user(agency=key))
    pid = new_photo(tok, partition=f"agency={key}")
    data = fake_jpeg()
    r = api("PUT", f"/api/v1/blobs/{pid}", tok, data=data, headers={"Content-Type": "image/jpeg"})
    assert r.status_code == 200, r.text
    return tok, pid, data


def test_the_worker_closes_the_connection_after_a_download():
    tok, pid, data = officer_with_photo()
    with kept_connection() as s:
        status, headers, body = ask(s, f"/api/v1/blobs/{pid}", tok)
        assert status == 200 and headers["x-accel-redirect"].startswith("/_blobs/") and body == b""
        assert headers["etag"] == f'"{sha(data)}"'
        assert closed_by_worker(s)


def test_every_other_answer_keeps_the_connection():
    tok, pid, data = officer_with_photo()
    with kept_connection() as s:
        # Not modified, not found (the contract's error), refused (no token), ordinary.
        status, headers, _ = ask(s, f"/api/v1/blobs/{pid}", tok, {"If-None-Match": f'"{sha(data)}"'})
        assert status == 304 and "x-accel-redirect" not in headers
        status, _, body = ask(s, f"/api/v1/blobs/no-such-photo-{pid}", tok)
        assert status == 404 and b'"not_found"' in body
        status, _, body = ask(s, f"/api/v1/blobs/{pid}")
        assert status == 401 and b'"error"' in body
        assert ask(s, "/healthz")[0] == 200
        # Still the same connection: one more answered on it.
        assert ask(s, "/api/v1/me", tok)[0] == 200
