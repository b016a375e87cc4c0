"""What nginx passes a worker with each request (Deploy/render-nginx.sh, FASTCGI_PARAMS): only
the parameters and headers the workers read, not Debian's fastcgi_params nor every request
header (docs/performance/round-22.md, "What the workers read"). A header the code starts to
read and the list forgets would reach the worker as absent; these tests catch that before a
user does."""
import glob
import os
import re
import uuid

from conftest import STATE, admin_db, new_user, session
from test_web_session import sign_in

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The server's targets; the clients (TidewayClient, tideway-device, the event publisher's
# client of nchan) name headers they send, not ones a worker reads.
CLIENT_TARGETS = ("TidewayClient", "tideway-device", "EventPublisher")


def headers_read():
    """Every header name a worker asks for (`headers["if-none-match"]`), lower case."""
    names = set()
    for path in glob.glob(os.path.join(REPO, "Sources", "*", "**", "*.swift"), recursive=True):
        if os.path.relpath(path, os.path.join(REPO, "Sources")).split(os.sep)[0] in CLIENT_TARGETS:
            continue
        with open(path) as f:
            names |= set(re.findall(r'headers\["([a-z0-9-]+)"\]', f.read()))
    return names


def passed_sets():
    """The FastCGI parameter names of each block of fastcgi_param lines in the stack's
    rendered config (the server's and the events hook's)."""
    with open(os.path.join(STATE, "nginx", "tideway.conf")) as f:
        conf = f.read()
    blocks = re.findall(r"((?:^[ \t]*fastcgi_pass_request_headers off;\n)(?:^[ \t]*fastcgi_param .*\n)+)", conf, re.M)
    return [set(re.findall(r"fastcgi_param\s+(\S+)", block)) for block in blocks]


def test_every_header_a_worker_reads_is_passed_and_no_other():
    names = headers_read()
    # The search itself works: these are read today (bearer tokens, sessions, conditional GETs).
    assert {"authorization", "cookie", "if-none-match"} <= names, names
    wanted = {{"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}.get(n, "HTTP_" + n.upper().replace("-", "_"))
              for n in names}
    sets = passed_sets()
    # The server block's list and the events hook's copy of it.
    assert len(sets) == 2, sets
    for passed in sets:
        assert wanted <= passed, wanted - passed
        # Headers passed by name only: nothing a worker does not read (HTTP_PROXY and the like).
        assert {p for p in passed if p.startswith("HTTP_")} == {w for w in wanted if w.startswith("HTTP_")}, passed
        assert {"REQUEST_METHOD", "DOCUMENT_URI", "QUERY_STRING", "REMOTE_ADDR", "REQUEST_ID"} <= passed, passed


def test_a_browser_sign_in_keeps_its_user_agent():
    """The one header no other end-to-end test sends on purpose: a web login's device is the
    browser's User-Agent (LoginPages)."""
    email = new_user()
    agent = f"params-browser/{uuid.uuid4().hex[:8]}"
    browser = session()
    browser.headers["User-Agent"] = agent
    r = sign_in(browser, email)
    assert r.status_code == 303, r.text
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select l.device from app.logins l join app.users u on u.id = l.user_id"
                    " where u.email = %s and l.kind = 'web'", (email,))
        assert cur.fetchall() == [(agent,)]
