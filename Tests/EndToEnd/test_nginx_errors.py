"""Every answer on /api/ is the contract's JSON error, also when nginx itself refuses the
request before any worker sees it (issue 20, defect 6): a bad URI, oversized headers, TRACE,
a body over the limit. Pages outside /api/ keep nginx's HTML. Raw sockets, because an HTTP
library would refuse to send most of these."""
import json
import socket
import ssl
import urllib.parse

import pytest

from conftest import CA, URL

HOST, PORT = urllib.parse.urlsplit(URL).hostname, urllib.parse.urlsplit(URL).port or 443


def raw(request: bytes):
    """Sends bytes over TLS and answers (status, headers with lower-case names, body)."""
    context = ssl.create_default_context(cafile=CA)
    with socket.create_connection((HOST, PORT), timeout=10) as plain, \
            context.wrap_socket(plain, server_hostname=HOST) as s:
        s.sendall(request)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                break
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), value.strip())
    if headers.get("transfer-encoding") == "chunked":
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    return status, headers, body


def request(method, path, extra=b"", body=b""):
    return raw(f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n".encode() + extra +
               (f"Content-Length: {len(body)}\r\n".encode() if body else b"") + b"\r\n" + body)


def assert_json_error(answer, status, code):
    got, headers, body = answer
    assert got == status, (got, headers, body[:300])
    assert headers.get("content-type", "").startswith("application/json"), (headers, body[:300])
    document = json.loads(body)
    assert set(document) == {"error"} and document["error"]["code"] == code and document["error"]["message"]
    # nginx's own answers carry the security headers too.
    assert headers.get("x-content-type-options") == "nosniff"
    return headers


@pytest.mark.parametrize("path", ["/api/v1/blobs/%00", "/api/v1/me/%00x", "/api/v1/%"])
def test_a_bad_uri_is_a_json_400(path):
    assert_json_error(request("GET", path), 400, "bad_request")


def test_an_oversized_header_is_a_json_error():
    assert_json_error(request("GET", "/api/v1/me", b"Authorization: Bearer " + b"a" * 20_000 + b"\r\n"),
                      400, "bad_request")


def test_an_oversized_request_line_is_a_json_error():
    got, headers, body = request("GET", "/api/v1/me?" + "a" * 20_000)
    assert got in (400, 414), (got, body[:200])
    assert_json_error((got, headers, body), got, "bad_request" if got == 400 else "too_large")


def test_trace_is_a_json_405_with_allow():
    headers = assert_json_error(request("TRACE", "/api/v1/me"), 405, "method_not_allowed")
    allowed = {m.strip() for m in headers["allow"].split(",")}
    assert "GET" in allowed and "TRACE" not in allowed


def test_a_body_over_the_limit_is_a_json_413():
    answer = request("POST", "/api/v1/sync/push", b"Content-Type: application/json\r\n"
                     b"Content-Length: 17000000\r\n", b"")
    assert_json_error(answer, 413, "too_large")


def test_pages_outside_the_api_keep_html_errors():
    got, headers, _ = request("GET", "/boardings/%00")
    assert got == 400 and headers.get("content-type", "").startswith("text/html")


def test_the_error_pages_are_not_reachable_from_outside():
    got, _, body = request("GET", "/_nginx_errors/400")
    assert got == 404, (got, body[:200])
