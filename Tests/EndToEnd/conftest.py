"""Shared fixtures for the end-to-end tests: a real stack (nginx over HTTPS, workers,
PostgreSQL) started by Deploy/dev/test.sh, which exports where it is."""
import contextlib
import os
import uuid

import psycopg2
import pytest
import requests

URL = os.environ.get("TIDEWAY_TEST_URL", "https://localhost:8543")
CA = os.environ.get("TIDEWAY_TEST_CA")
ADMIN_DB = os.environ.get("TIDEWAY_TEST_ADMIN_DATABASE")
WORKER_DB = os.environ.get("TIDEWAY_TEST_DATABASE")
STATE = os.environ.get("TIDEWAY_TEST_STATE")
PASSWORD = "tideway-demo"
AGENCIES = ["WildAid", "Gabon", "Parque Nacional Galápagos", "Ecuadorian Galapagos"]
SLUGS = {"WildAid": "wildaid", "Gabon": "gabon", "Parque Nacional Galápagos": "parquenacionalgalapagos",
         "Ecuadorian Galapagos": "ecuadoriangalapagos"}

if not CA:
    pytest.skip("no test stack (run through `make test`)", allow_module_level=True)


def session():
    """A requests session that trusts the stack's own CA."""
    s = requests.Session()
    # REQUESTS_CA_BUNDLE in the environment would override `verify` otherwise.
    s.trust_env = False
    s.verify = CA
    # Otherwise REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE from the environment (set on many
    # machines and CI images) win over s.verify, and the stack's certificate fails.
    s.trust_env = False
    return s


def api(method, path, token=None, json=None, **kwargs):
    headers = kwargs.pop("headers", {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return requests.request(method, URL + path, json=json, headers=headers, verify=CA, timeout=60, **kwargs)


def login(email, password=PASSWORD, device=None):
    """Signs in through the API and answers the whole login answer (tokens and user)."""
    body = {"email": email, "password": password}
    if device:
        body["device"] = device
    r = api("POST", "/api/v1/auth/login", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def token(email):
    return login(email)["accessToken"]


def admin_db():
    """A superuser connection (autocommit) for arranging and checking state directly."""
    conn = psycopg2.connect(ADMIN_DB)
    conn.autocommit = True
    return conn


def fold_summaries(partition=None):
    """Folds report changes into the dashboards' daily summaries now, as the job runner does
    every half second (Migrations/0087), so that a test reads exact summaries at once."""
    with admin_db() as conn, conn.cursor() as cur:
        if partition is None:
            cur.execute("select app.fold_boarding_summaries()")
        else:
            cur.execute("select app.fold_boarding_summaries(%s)", (partition,))
        return cur.fetchone()[0]


def worker_db():
    """A connection as the workers' own role: row-level security applies to it."""
    return psycopg2.connect(WORKER_DB)


def claim(cur, user_id, role, agency=""):
    """The caller's claims on a `worker_db()` (or `set local role tideway_worker`) cursor, as
    app.authenticate sets them for a request: row-level security then answers for that user."""
    cur.execute("select set_config('tideway.user_id', %s, true), set_config('tideway.role', %s, true), "
                "set_config('tideway.agency', %s, true)", (user_id, role, agency or ""))


@contextlib.contextmanager
def workers_refused(function):
    """EXECUTE on `function` (its signature, e.g. "app.unchanged(bytea, text[], bigint[],
    bigint[])") taken from the workers' role for the block: every request PostgreSQL would
    answer through it fails, so a success can only have come from a worker's memory."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(f"revoke execute on function {function} from tideway_worker")
    try:
        yield
    finally:
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute(f"grant execute on function {function} to tideway_worker")



def new_user(role="officer", agency="Gabon", password=PASSWORD):
    """A fresh user (so tests that revoke or rate-limit do not disturb the demo logins)."""
    email = f"t-{uuid.uuid4().hex[:10]}@test.tideway"
    import subprocess
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = [os.path.join(repo, ".build/release/tideway"), "create-user", "--database", ADMIN_DB,
            "--email", email, "--role", role, "--first-name", "Test", "--last-name", role.title()]
    if agency:
        args += ["--agency", agency]
    subprocess.run(args, check=True, env={**os.environ, "TIDEWAY_PASSWORD": password}, capture_output=True)
    return email


@contextlib.contextmanager
def login_failures_taken_back(key_pattern):
    """The rate limits count by key in app.login_failures (an address, an e-mail, a
    /forgot source). A test that adds to a count on purpose takes its own rows matching
    key_pattern (a LIKE pattern) off afterwards, so later tests are not refused."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select clock_timestamp()")
        started = cur.fetchone()[0]
    try:
        yield
    finally:
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("delete from app.login_failures where key like %s and at >= %s", (key_pattern, started))


@pytest.fixture
def own_address_failures():
    """Every test signs in from 127.0.0.1, like all the others: a test that fails sign-ins
    on purpose takes its failures back (per address and account, and per account)."""
    with login_failures_taken_back("pair:%"), login_failures_taken_back("email:%"), \
            login_failures_taken_back("address:%"):
        yield


@pytest.fixture
def fresh_officer():
    return new_user()


@pytest.fixture
def rolled_back_cursor():
    """A superuser cursor whose transaction is rolled back after the test: for tests that
    write rows straight into the schema and leave nothing behind."""
    conn = psycopg2.connect(ADMIN_DB)
    try:
        with conn.cursor() as c:
            yield c
    finally:
        conn.rollback()
        conn.close()


def error_of(response, status, code):
    """Checks that an API answer is the contract's JSON error with this status and code,
    and answers its body."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers.get("Content-Type", "").startswith("application/json"), response.headers
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body


def worker_pids():
    """The pid of each worker process of the stack, from the supervisors' pid files
    (None for a file the supervisor is rewriting at that moment)."""
    run = os.path.join(STATE, "run")
    pids = {}
    for name in sorted(os.listdir(run)):
        if name.startswith("worker-") and name.endswith(".pid"):
            with open(os.path.join(run, name)) as f:
                text = f.read().strip()
            pids[name[:-4]] = int(text) if text.isdigit() else None
    return pids


def fastcgi_request(method, path, headers=None, body=b"", content_length=None, remote_addr="127.0.0.1",
                    keep=False):
    """The records of one FastCGI request as nginx sends them: FCGI_BEGIN_REQUEST (responder;
    FCGI_KEEP_CONN when `keep`, as nginx's fastcgi_keep_conn), FCGI_PARAMS, FCGI_STDIN, each
    ended by an empty record."""
    import struct

    def record(kind, content, request_id=1):
        return struct.pack(">BBHHBx", 1, kind, request_id, len(content), 0) + content

    def pair(name, value):
        out = b""
        for item in (name, value):
            n = len(item)
            out += bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)
        return out + name + value

    path_only, _, query = path.partition("?")
    params = {"REQUEST_METHOD": method, "REQUEST_URI": path, "DOCUMENT_URI": path_only, "QUERY_STRING": query,
              "REMOTE_ADDR": remote_addr, "HTTPS": "on", "SERVER_PROTOCOL": "HTTP/1.1",
              "CONTENT_LENGTH": str(len(body) if content_length is None else content_length)}
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        params[key if key == "CONTENT_TYPE" else "HTTP_" + key] = value
    encoded = b"".join(pair(k.encode(), v.encode()) for k, v in params.items())
    message = record(1, struct.pack(">HB5x", 1, 1 if keep else 0)) + record(4, encoded) + record(4, b"")
    for i in range(0, len(body), 65535):
        message += record(5, body[i:i + 65535])
    return message + record(5, b"")


def fastcgi_answer(s):
    """Reads one answer from a connected FastCGI socket, up to its FCGI_END_REQUEST (or the
    connection's end). Answers (status, headers, body)."""
    import struct

    out, data = b"", b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        ended = False
        while len(data) >= 8:
            _, kind, _, length, padding = struct.unpack(">BBHHB", data[:7])
            if len(data) < 8 + length + padding:
                break
            if kind == 6:  # FCGI_STDOUT
                out += data[8:8 + length]
            elif kind == 3:  # FCGI_END_REQUEST
                ended = True
            data = data[8 + length + padding:]
        if ended:
            break
    head, _, content = out.partition(b"\r\n\r\n")
    answer_headers = {}
    for line in head.decode().split("\r\n"):
        name, _, value = line.partition(":")
        answer_headers[name.strip().lower()] = value.strip()
    status = int(answer_headers.get("status", "200").split()[0])
    return status, answer_headers, content


def fastcgi(socket_path, method, path, headers=None, body=b"", content_length=None, timeout=10,
            remote_addr="127.0.0.1"):
    """One request straight to a worker's FastCGI socket, past nginx: to reach one given
    worker, or to send what nginx would refuse. Answers (status, headers, body)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(socket_path)
        s.sendall(fastcgi_request(method, path, headers, body, content_length, remote_addr))
        return fastcgi_answer(s)
