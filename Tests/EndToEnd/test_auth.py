"""The API's authentication (sync-protocol.md, "Authentication") and its error contract,
against the real stack: nginx over HTTPS, the workers, PostgreSQL."""
import json
import os
import uuid

import pytest

from conftest import (AGENCIES, PASSWORD, STATE, admin_db, api, error_of, fastcgi, login, new_user,
                      token)

# The worker's defaults (Config.swift); the test stack does not change them.
FREE_FAILURES = 5
BACKOFF_CAP_SECONDS = 900


def me(access):
    return api("GET", "/api/v1/me", token=access)


def test_login_answers_tokens_and_the_user():
    r = api("POST", "/api/v1/auth/login", json={"email": "gabon.officer1@demo.tideway", "password": PASSWORD,
                                                "device": "pytest"})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    assert r.headers.get("Cache-Control") == "no-store"
    body = r.json()
    assert set(body) == {"accessToken", "refreshToken", "expiresIn", "user"}
    assert body["accessToken"] != body["refreshToken"]
    assert all(isinstance(body[k], str) and len(body[k]) >= 32 for k in ("accessToken", "refreshToken"))
    assert isinstance(body["expiresIn"], int) and body["expiresIn"] > 0
    user = body["user"]
    assert set(user) == {"id", "email", "displayName", "agency", "role"}
    assert user["email"] == "gabon.officer1@demo.tideway"
    assert user["agency"] == "Gabon" and user["role"] == "officer"
    uuid.UUID(user["id"])
    # The access token works, and says who it belongs to.
    r = me(body["accessToken"])
    assert r.status_code == 200, r.text
    assert r.json() == {"user": user}


def test_login_email_is_case_insensitive_and_global_admin_has_no_agency():
    user = login("ADMIN@Demo.Tideway")["user"]
    assert user["email"] == "admin@demo.tideway"
    assert user["role"] == "globalAdmin" and user["agency"] is None


@pytest.mark.parametrize("agency", AGENCIES)
def test_every_agency_has_its_demo_logins(agency):
    from conftest import SLUGS
    slug = SLUGS[agency]
    roles = {login(f"{slug}.{who}@demo.tideway")["user"]["role"] for who in ("admin", "officer1", "officer2")}
    assert roles == {"agencyAdmin", "officer"}


def test_only_stored_token_hashes():
    pair = login(new_user())
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.tokens where hash = sha256(%s::bytea)",
                    (pair["accessToken"].encode(),))
        assert cur.fetchone()[0] == 1
        cur.execute("select count(*) from app.tokens where encode(hash, 'escape') like %s",
                    ("%" + pair["accessToken"] + "%",))
        assert cur.fetchone()[0] == 0
        cur.execute("select password_hash from app.users where email = 'gabon.officer1@demo.tideway'")
        stored = cur.fetchone()[0]
    assert PASSWORD not in stored and stored.startswith("$argon2id$")


def test_wrong_password_and_unknown_email_get_the_same_answer(own_address_failures):
    email = new_user()
    wrong = api("POST", "/api/v1/auth/login", json={"email": email, "password": "not-the-password"})
    unknown = api("POST", "/api/v1/auth/login", json={"email": f"nobody-{uuid.uuid4().hex[:8]}@test.tideway",
                                                      "password": PASSWORD})
    error_of(wrong, 401, "unauthenticated")
    error_of(unknown, 401, "unauthenticated")
    # Byte for byte, but for the request's own id (which every answer carries).
    assert wrong.content.replace(wrong.headers["X-Request-Id"].encode(), b"ID") == \
        unknown.content.replace(unknown.headers["X-Request-Id"].encode(), b"ID")
    assert "Retry-After" not in wrong.headers


def test_inactive_user_cannot_sign_in(own_address_failures):
    email = new_user()
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set active = false where email = %s", (email,))
    error_of(api("POST", "/api/v1/auth/login", json={"email": email, "password": PASSWORD}), 401, "unauthenticated")


def test_repeated_failures_from_one_address_on_one_account_back_off(own_address_failures):
    email = new_user()
    # Failures this test made, counted here rather than read back from the server.
    for failure in range(1, FREE_FAILURES + 1):
        r = api("POST", "/api/v1/auth/login", json={"email": email, "password": f"wrong-{failure}"})
        error_of(r, 401, "unauthenticated")
    # The free failures are spent: this address waits before trying this account again,
    # even with the right password, and is told how long.
    for password in ("wrong-again", PASSWORD):
        r = api("POST", "/api/v1/auth/login", json={"email": email, "password": password})
        error_of(r, 429, "rate_limited")
        retry = int(r.headers["Retry-After"])
        assert 0 < retry <= BACKOFF_CAP_SECONDS
    # Another email from the same address is not affected.
    assert login(new_user())["user"]["role"] == "officer"
    # Once the wait is over, the user may try again.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.login_failures set at = at - make_interval(secs => %s) where key like %s",
                    (BACKOFF_CAP_SECONDS + 1, "%" + email))
    assert login(email)["user"]["email"] == email


def test_refresh_rotates_the_pair():
    first = login(new_user())
    r = api("POST", "/api/v1/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert r.status_code == 200, r.text
    second = r.json()
    assert set(second) == {"accessToken", "refreshToken", "expiresIn", "user"}
    assert second["user"] == first["user"]
    assert {second["accessToken"], second["refreshToken"]}.isdisjoint({first["accessToken"], first["refreshToken"]})
    assert me(second["accessToken"]).status_code == 200
    # app.rotate_refresh keeps only the newest pair alive.
    error_of(me(first["accessToken"]), 401, "unauthenticated")
    # And the new refresh token rotates again.
    r = api("POST", "/api/v1/auth/refresh", json={"refreshToken": second["refreshToken"]})
    assert r.status_code == 200, r.text
    assert me(r.json()["accessToken"]).status_code == 200


def test_reusing_a_spent_refresh_token_signs_the_login_out_everywhere():
    email = new_user()
    stolen = login(email)
    other_device = login(email)
    r = api("POST", "/api/v1/auth/refresh", json={"refreshToken": stolen["refreshToken"]})
    assert r.status_code == 200, r.text
    current = r.json()
    # The spent token comes back (an attacker's copy, or the owner's after the attacker's).
    error_of(api("POST", "/api/v1/auth/refresh", json={"refreshToken": stolen["refreshToken"]}), 401, "unauthenticated")
    error_of(me(current["accessToken"]), 401, "unauthenticated")
    error_of(api("POST", "/api/v1/auth/refresh", json={"refreshToken": current["refreshToken"]}), 401,
             "unauthenticated")
    # Only that login: the user's other device keeps working.
    assert me(other_device["accessToken"]).status_code == 200


def test_refresh_refuses_unknown_and_access_tokens():
    pair = login(new_user())
    error_of(api("POST", "/api/v1/auth/refresh", json={"refreshToken": "x" * 43}), 401, "unauthenticated")
    error_of(api("POST", "/api/v1/auth/refresh", json={"refreshToken": pair["accessToken"]}), 401, "unauthenticated")
    # A refresh token is not an access token either.
    error_of(me(pair["refreshToken"]), 401, "unauthenticated")
    error_of(api("POST", "/api/v1/auth/refresh", json={}), 400, "bad_request")


def test_logout_revokes_at_once():
    email = new_user()
    pair = login(email)
    other = login(email)
    r = api("POST", "/api/v1/auth/logout", token=pair["accessToken"])
    assert r.status_code == 204 and r.content == b""
    error_of(me(pair["accessToken"]), 401, "unauthenticated")
    error_of(api("POST", "/api/v1/auth/refresh", json={"refreshToken": pair["refreshToken"]}), 401, "unauthenticated")
    error_of(api("POST", "/api/v1/auth/logout", token=pair["accessToken"]), 401, "unauthenticated")
    assert me(other["accessToken"]).status_code == 200


def test_deactivation_revokes_api_tokens_at_once():
    email = new_user()
    pair = login(email)
    assert me(pair["accessToken"]).status_code == 200
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set active = false where email = %s", (email,))
    error_of(me(pair["accessToken"]), 401, "unauthenticated")
    error_of(api("GET", "/api/v1/sync/partitions", token=pair["accessToken"]), 401, "unauthenticated")
    error_of(api("POST", "/api/v1/auth/refresh", json={"refreshToken": pair["refreshToken"]}), 401, "unauthenticated")
    # Reactivating does not bring the old tokens back: the logins were revoked.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set active = true where email = %s", (email,))
    error_of(me(pair["accessToken"]), 401, "unauthenticated")


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer ", "Bearer not-a-token", "Basic dXNlcjpwdw==",
                                           "Bearer " + "A" * 43])
def test_missing_or_garbage_bearer_is_401(authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    for path in ("/api/v1/me", "/api/v1/sync/partitions"):
        error_of(api("GET", path, headers=headers), 401, "unauthenticated")
    error_of(api("POST", "/api/v1/auth/logout", headers=headers), 401, "unauthenticated")


# The error contract on API paths: JSON, never HTML.

def test_unknown_api_path_is_json_404():
    error_of(api("GET", "/api/v1/no-such-thing"), 404, "not_found")
    error_of(api("POST", "/api/v2/auth/login", json={}), 404, "not_found")


def test_wrong_method_is_405_with_allow():
    r = api("GET", "/api/v1/auth/login")
    error_of(r, 405, "method_not_allowed")
    assert r.headers["Allow"] == "POST"
    r = api("DELETE", "/api/v1/me", token="x")
    error_of(r, 405, "method_not_allowed")
    assert set(r.headers["Allow"].replace(" ", "").split(",")) == {"GET"}


def test_oversized_body_is_json_413_from_nginx():
    body = b'{"email": "' + b"a" * (16 * 1024 * 1024) + b'"}'
    r = api("POST", "/api/v1/auth/login", data=body, headers={"Content-Type": "application/json"})
    error_of(r, 413, "too_large")


def test_oversized_body_is_json_413_from_the_worker():
    """The worker keeps its own limit (TIDEWAY_MAX_BODY_BYTES, 16 MiB by default) for when
    nginx is configured with a larger one: sent past nginx, straight to a worker, a body
    declared larger is refused before it is read."""
    sock = os.path.join(STATE, "run", "worker-1.sock")
    status, headers, body = fastcgi(sock, "POST", "/api/v1/auth/login", headers={"Content-Type": "application/json"},
                                    body=b"{}", content_length=16 * 1024 * 1024 + 1)
    assert status == 413 and headers["content-type"].startswith("application/json"), (status, body)
    assert json.loads(body)["error"]["code"] == "too_large"


def test_wrong_content_type_is_415():
    r = api("POST", "/api/v1/auth/login", data='{"email": "a@b.c", "password": "x"}',
            headers={"Content-Type": "text/plain"})
    error_of(r, 415, "unsupported_media_type")
    r = api("POST", "/api/v1/auth/login", data="email=a%40b.c&password=x",
            headers={"Content-Type": "application/x-www-form-urlencoded"})
    error_of(r, 415, "unsupported_media_type")


@pytest.mark.parametrize("body", [b'{"email": "a@b.c", "password": ', b"not json", b"[1, 2]", b"",
                                  b'{"email": "a@b.c", "password": "x", "extra": 1}',
                                  b'{"email": 1, "password": "x"}', b'{"email": "a@b.c", "password": "x"} trailing'])
def test_malformed_or_misshapen_json_is_400(body):
    r = api("POST", "/api/v1/auth/login", data=body, headers={"Content-Type": "application/json"})
    error_of(r, 400, "bad_request")


def test_nul_characters_are_refused_before_the_database():
    """libpq cannot carry a NUL inside a parameter: the parser refuses it as 400, and the
    answer names no database internals."""
    for field in ("email", "password"):
        body = {"email": "a@b.c", "password": "x"}
        body[field] = "a\u0000b"
        r = api("POST", "/api/v1/auth/login", data=json.dumps(body),
                headers={"Content-Type": "application/json"})
        error_of(r, 400, "bad_request")
        assert "postgres" not in r.text.lower() and "sql" not in r.text.lower()


def test_healthz_is_ok_and_plain():
    r = api("GET", "/healthz")
    assert r.status_code == 200 and r.text == "ok\n"
    assert api("GET", "/api/v1/healthz").status_code == 200


def test_me_and_partitions_agree_on_the_caller():
    access = token("wildaid.admin@demo.tideway")
    user = me(access).json()["user"]
    assert user["role"] == "agencyAdmin" and user["agency"] == "WildAid"
    partitions = api("GET", "/api/v1/sync/partitions", token=access).json()["partitions"]
    names = {p["partition"] for p in partitions}
    assert f"user={user['id']}" in names and "agency=WildAid" in names and "agency=Gabon" not in names


AUTH_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "Migrations", "repeatable", "0003_auth.sql")
# The shape the release before issue 22 left in the database (a set), and one a later release
# might (another column): neither can be replaced in place by a `create or replace`.
OTHER_SHAPES = [
    """create function app.authenticate(token_hash bytea, token_kind text default 'access')
       returns table (user_id uuid, email text, display_name text, role text, agency text, login_id uuid)
       language sql as $$ select null::uuid, ''::text, ''::text, ''::text, ''::text, null::uuid $$""",
    """create function app.authenticate(token_hash bytea, token_kind text default 'access',
           out user_id uuid, out email text, out display_name text, out role text, out agency text,
           out login_id uuid, out locale text)
       language sql as $$ select null::uuid, ''::text, ''::text, ''::text, ''::text, null::uuid, ''::text $$""",
]


@pytest.mark.parametrize("other", [None] + OTHER_SHAPES, ids=["itself", "set of before issue 22", "later columns"])
def test_the_auth_file_applies_over_any_shape_of_authenticate(other):
    """repeatable/0003 needs no manual drop, whatever app.authenticate the database holds
    (Migrations/README.md, "Going back"); over itself it replaces in place (same function,
    no drop). In one transaction, rolled back: the stack keeps its own."""
    access = token("gabon.officer1@demo.tideway")
    conn = admin_db()
    conn.autocommit = False
    try:
        with conn.cursor() as cur:
            cur.execute("set local role tideway_owner")
            cur.execute("select to_regprocedure('app.authenticate(bytea, text)')::oid")
            before = cur.fetchone()[0]
            if other:
                cur.execute("drop function app.authenticate(bytea, text)")
                cur.execute(other)
            cur.execute(open(AUTH_FILE, encoding="utf-8").read())
            cur.execute("select oid, proretset, pg_get_function_result(oid) from pg_proc"
                        " where oid = to_regprocedure('app.authenticate(bytea, text)')")
            oid, retset, result = cur.fetchone()
            assert not retset and result == "record"
            assert (oid == before) == (other is None)
            cur.execute("select has_function_privilege('tideway_worker', %s, 'execute')", (oid,))
            assert cur.fetchone()[0]
            cur.execute("select email, current_setting('tideway.role') from app.authenticate(sha256(%s::bytea))",
                        (access.encode(),))
            assert cur.fetchone() == ("gabon.officer1@demo.tideway", "officer")
    finally:
        conn.rollback()
        conn.close()
