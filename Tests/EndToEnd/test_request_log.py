"""One structured log line per request (issue 20, Logs): the workers write a JSON line per
request to standard error with nginx's request id, which every answer echoes as
X-Request-Id and every JSON error body as `requestId`; never a token, a password or a
document (Deploy/README.md, "Logs")."""
import glob
import json
import os
import re
import time
import uuid

from conftest import PASSWORD, STATE, URL, api, login, new_user, session
from patrol_support import fake_jpeg, new_photo
from synclib import Client, change, doc_for
from test_web_session import sign_in

REQUEST_ID = re.compile(r"^[0-9a-f]{32}$")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def worker_logs():
    return sorted(glob.glob(os.path.join(STATE, "log", "worker-*.log")))


def log_sizes():
    return {path: os.path.getsize(path) for path in worker_logs()}


def written_since(sizes):
    text = ""
    for path in worker_logs():
        with open(path, errors="replace") as f:
            f.seek(sizes.get(path, 0))
            text += f.read()
    return text


def request_lines(text):
    """The JSON request lines of a log text, by request id (every one must parse)."""
    lines = {}
    for line in text.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("msg") == "request":
                lines[entry["requestId"]] = entry
    return lines


def lines_for(sizes, responses, timeout=5):
    """The log lines of these responses (by their X-Request-Id), and all the text written."""
    wanted = {r.headers["X-Request-Id"] for r in responses}
    deadline = time.monotonic() + timeout
    while True:
        text = written_since(sizes)
        lines = request_lines(text)
        if wanted <= set(lines) or time.monotonic() > deadline:
            return lines, text
        time.sleep(0.1)


def test_every_request_has_one_json_line_with_its_id_and_caller_and_no_secrets():
    sizes = log_sizes()
    email = new_user()
    device = f"log-phone-{uuid.uuid4().hex[:6]}"
    client_id = f"log-client-{uuid.uuid4().hex[:8]}"
    wrong_password = f"wrong-{uuid.uuid4().hex}"
    secret_text = f"secret-{uuid.uuid4().hex}"

    signed = api("POST", "/api/v1/auth/login", json={"email": email, "password": PASSWORD, "device": device})
    assert signed.status_code == 200, signed.text
    tokens = signed.json()
    officer = Client(token=tokens["accessToken"])
    user = tokens["user"]["id"]
    report = f"log-{uuid.uuid4().hex}"
    body = {**doc_for("reports", report),
            "vessel": {"name": secret_text, "homePort": "Libreville", "nationality": "GA", "permitNumber": "P-1"}}
    pushed = officer.post("/api/v1/sync/push", {"clientId": client_id, "changes": [
        change("insert", "reports", "agency=Gabon", report, body)]})
    assert pushed.status_code == 200 and pushed.json()["results"][0]["status"] == "applied", pushed.text
    pulled = officer.post("/api/v1/sync/pull", {"partitions": {"agency=Gabon": None}, "limit": 1, "clientId": client_id})
    me = api("GET", "/api/v1/me", tokens["accessToken"])
    refused = api("POST", "/api/v1/auth/login", json={"email": email, "password": wrong_password})
    unknown = api("GET", "/api/v1/no/such/path", tokens["accessToken"])
    bad_token = api("GET", "/api/v1/me", "not-a-token-" + secret_text)
    # A photo download: its caller is logged though its token is checked inside one statement.
    photo = new_photo(tokens["accessToken"])
    uploaded = api("PUT", f"/api/v1/blobs/{photo}", tokens["accessToken"], data=fake_jpeg(),
                   headers={"Content-Type": "image/jpeg"})
    assert uploaded.status_code == 200, uploaded.text
    download = api("GET", f"/api/v1/blobs/{photo}", tokens["accessToken"])
    no_blob = api("GET", f"/api/v1/blobs/no-such-{photo}", tokens["accessToken"])
    report_page = session()
    assert sign_in(report_page, email).status_code == 303
    page = report_page.get(URL + f"/boardings/{report}", allow_redirects=False)
    responses = {"login": signed, "push": pushed, "pull": pulled, "me": me, "refused": refused,
                 "unknown": unknown, "bad_token": bad_token, "page": page, "download": download, "no_blob": no_blob}
    expected = {  # route, status, user, clientId
        "login": ("/api/v1/auth/login", 200, user, None),
        "push": ("/api/v1/sync/push", 200, user, client_id),
        "pull": ("/api/v1/sync/pull", 200, user, client_id),
        "me": ("/api/v1/me", 200, user, None),
        "refused": ("/api/v1/auth/login", 401, None, None),
        "unknown": (None, 404, None, None),
        "bad_token": ("/api/v1/me", 401, None, None),
        "page": ("/boardings/:id", 200, user, None),
        "download": ("/api/v1/blobs/:photoId", 200, user, None),
        "no_blob": ("/api/v1/blobs/:photoId", 404, user, None),
    }
    for name, r in responses.items():
        assert REQUEST_ID.match(r.headers.get("X-Request-Id", "")), (name, r.headers)
    assert len({r.headers["X-Request-Id"] for r in responses.values()}) == len(responses)

    lines, text = lines_for(sizes, responses.values())
    for name, r in responses.items():
        entry = lines.get(r.headers["X-Request-Id"])
        assert entry is not None, (name, text[-3000:])
        route, status, uid, cid = expected[name]
        assert r.status_code == status, (name, r.status_code, r.text[:300])
        assert TIME.match(entry["time"]), entry
        assert entry["method"] == r.request.method and entry["route"] == route, (name, entry)
        assert entry["status"] == status and entry["level"] == "info", (name, entry)
        assert isinstance(entry["durationMs"], (int, float)) and 0 <= entry["durationMs"] < 60_000, entry
        assert entry.get("userId") == uid, (name, entry)
        assert entry.get("clientId") == cid, (name, entry)
    assert lines[signed.headers["X-Request-Id"]]["device"] == device
    # Exactly one line per request.
    for r in responses.values():
        assert text.count(f'"requestId":"{r.headers["X-Request-Id"]}"') == 1

    # The error bodies carry the same id as the header.
    for r in (refused, unknown, bad_token):
        assert r.json()["error"]["requestId"] == r.headers["X-Request-Id"], r.text

    # Nothing secret: tokens, passwords, the session cookie, the document's text.
    for secret in [tokens["accessToken"], tokens["refreshToken"], PASSWORD, wrong_password, secret_text,
                   report_page.cookies.get("tw_session")]:
        assert secret and secret not in text, secret


def test_a_streamed_answer_is_logged_with_the_status_it_sent_and_its_caller():
    """A pull's answer is streamed: its line is written once the body has run, so it names
    the caller its own transaction authenticated, on the worker that took the push before it
    on the same connection (whose presence touch is then skipped), and a pull whose token is
    refused inside the stream is logged as the 401 it sent, not the 200 head it replaced."""
    sizes = log_sizes()
    tokens = login(new_user())
    officer = Client(token=tokens["accessToken"])
    d = f"log-{uuid.uuid4().hex}"
    pushed = officer.post("/api/v1/sync/push", {"clientId": "log-streamed", "changes": [
        change("insert", "reports", "agency=Gabon", d, doc_for("reports", d))]})
    pulls = [officer.post("/api/v1/sync/pull", {"partitions": {"agency=Gabon": None}, "limit": 1}) for _ in range(4)]
    refused = api("POST", "/api/v1/sync/pull", f"not-a-token-{uuid.uuid4().hex}",
                  json={"partitions": {"agency=Gabon": None}, "limit": 1})
    assert pushed.status_code == 200 and all(p.status_code == 200 for p in pulls), pushed.text
    assert refused.status_code == 401 and refused.json()["error"]["code"], refused.text
    lines, text = lines_for(sizes, [pushed, refused, *pulls])
    for pull in pulls:
        entry = lines[pull.headers["X-Request-Id"]]
        assert (entry["route"], entry["status"], entry.get("userId")) == ("/api/v1/sync/pull", 200, tokens["user"]["id"]), entry
    entry = lines[refused.headers["X-Request-Id"]]
    assert (entry["route"], entry["status"], entry.get("userId")) == ("/api/v1/sync/pull", 401, None), entry


def test_nginx_own_errors_carry_the_request_id_too():
    r = api("TRACE", "/api/v1/me")
    assert r.status_code == 405
    assert REQUEST_ID.match(r.headers["X-Request-Id"])
    assert r.json()["error"]["requestId"] == r.headers["X-Request-Id"]
    # Static files and pages get the header as well.
    s = session()
    for path in ["/static/tideway.css", "/login"]:
        answer = s.get(URL + path)
        assert answer.status_code == 200 and REQUEST_ID.match(answer.headers["X-Request-Id"]), path


def test_an_idle_poll_is_counted_and_not_logged():
    """A pull that finds nothing new gets no line (TIDEWAY_LOG_IDLE_POLLS is off in the dev
    stack, as by default): it is counted in tideway_idle_polls_total. A pull that brings a
    change is logged as before."""
    from test_metrics import scrape
    from test_sync_idle_memory import assert_idle, officer_at_the_end

    def idle_polls_counted():
        samples = scrape()["samples"]
        return sum(samples.get(f'tideway_idle_polls_total{{answered_by="{place}"}}', 0) for place in ("memory", "database"))

    officer, key, cursors = officer_at_the_end()
    counted = idle_polls_counted()
    sizes = log_sizes()
    idle = [officer.pull_raw(cursors) for _ in range(6)]
    for r in idle:
        assert r.status_code == 200, r.text
        assert_idle(r.json()["partitions"], cursors)
    d = f"log-{uuid.uuid4().hex}"
    Client(new_user(agency=key)).push([change("insert", "reports", f"agency={key}", d, doc_for("reports", d))])
    changed = officer.pull_raw(cursors)
    assert [c["id"] for c in changed.json()["partitions"][f"agency={key}"]["changes"]] == [d], changed.text
    me = api("GET", "/api/v1/me", officer.token)
    lines, text = lines_for(sizes, [changed, me])
    assert lines.get(changed.headers["X-Request-Id"], {}).get("route") == "/api/v1/sync/pull", text[-3000:]
    for r in idle:
        assert r.headers["X-Request-Id"] not in text
    assert idle_polls_counted() >= counted + len(idle)
