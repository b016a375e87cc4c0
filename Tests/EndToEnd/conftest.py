"""Shared fixtures for the end-to-end tests: a real stack (nginx over HTTPS, workers,
PostgreSQL) started by Deploy/dev/test.sh, which exports where it is."""
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


def worker_db():
    """A connection as the workers' own role: row-level security applies to it."""
    return psycopg2.connect(WORKER_DB)


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


@pytest.fixture
def fresh_officer():
    return new_user()
