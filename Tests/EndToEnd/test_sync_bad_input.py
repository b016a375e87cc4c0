"""Bad input to pull and push: a 4xx in the contract's error shape, never a 5xx, and
nothing written (row counts, clocks and the push log are the same after)."""
import base64
import json
import uuid

import pytest
import requests

from conftest import CA, URL, error_of
from synclib import PUSH_LOG_INDEX, Client, change, counts, doc_for

PULL, PUSH = "/api/v1/sync/pull", "/api/v1/sync/push"


@pytest.fixture(scope="module")
def officer():
    return Client("gabon.officer1@demo.tideway")


def send(client, path, data, content_type="application/json"):
    return client.http.post(URL + path, data=data, headers={"Content-Type": content_type}, timeout=120)


def nested(depth):
    return "[" * (depth - 1) + "{}" + "]" * (depth - 1)


def push_body(changes, client_id=None):
    return json.dumps({"clientId": client_id or uuid.uuid4().hex, "changes": changes})


def report_change(extra=None):
    d = f"bad-{uuid.uuid4().hex}"
    return change("insert", "reports", "agency=Gabon", d, {**doc_for("reports", d), **(extra or {})})


BAD_BODIES = [
    # (name, path, body text, status, code)
    ("malformed json", PUSH, '{"clientId": "x", "changes": [', 400, "bad_request"),
    ("trailing garbage", PULL, '{"partitions": {}} x', 400, "bad_request"),
    ("not json at all", PULL, "partitions=agency%3DGabon", 400, "bad_request"),
    ("array at top", PUSH, "[]", 400, "bad_request"),
    ("string at top", PULL, '"agency=Gabon"', 400, "bad_request"),
    ("empty body", PULL, "", 400, "bad_request"),
    ("unknown pull field", PULL, '{"partitions": {}, "since": 1}', 400, "bad_request"),
    ("unknown push field", PUSH, '{"clientId": "x", "changes": [], "force": true}', 400, "bad_request"),
    ("partitions not an object", PULL, '{"partitions": ["agency=Gabon"]}', 400, "bad_request"),
    ("cursor not a string", PULL, '{"partitions": {"agency=Gabon": 5}}', 400, "bad_request"),
    ("limit zero", PULL, '{"partitions": {"agency=Gabon": null}, "limit": 0}', 400, "bad_request"),
    ("limit above the maximum", PULL, '{"partitions": {"agency=Gabon": null}, "limit": 10001}', 400, "bad_request"),
    ("limit a string", PULL, '{"partitions": {"agency=Gabon": null}, "limit": "10"}', 400, "bad_request"),
    ("wait above 30", PULL, '{"partitions": {"agency=Gabon": null}, "wait": 31}', 400, "bad_request"),
    ("changes not an array", PUSH, '{"clientId": "x", "changes": {}}', 400, "bad_request"),
    ("clientId missing", PUSH, '{"changes": []}', 400, "bad_request"),
    ("clientId a number", PUSH, '{"clientId": 7, "changes": []}', 400, "bad_request"),
    ("change not an object", PUSH, '{"clientId": "x", "changes": [1]}', 400, "bad_request"),
    ("change without changeId", PUSH, json.dumps({"clientId": "x", "changes": [{"op": "delete"}]}), 400, "bad_request"),
    ("33 levels of nesting in a pull", PULL, '{"partitions": {}, "limit": ' + nested(32) + "}", 400, "bad_request"),
    ("33 levels of nesting in a document", PUSH, push_body([report_change({"notes": json.loads(nested(31))})]),
     400, "bad_request"),
    ("a string above 256 KiB in a pull", PULL,
     json.dumps({"partitions": {"agency=Gabon": "c:" + "A" * (256 * 1024 + 1)}}), 400, "bad_request"),
    ("invalid UTF-8", PULL, b'{"partitions": {"agency=\xff": null}}', 400, "bad_request"),
]


@pytest.mark.parametrize("name,path,body,status,code", BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_bodies_are_refused_and_write_nothing(officer, name, path, body, status, code):
    before = counts()
    error_of(send(officer, path, body), status, code)
    assert counts() == before


def test_a_string_above_256_kib_in_a_document_rejects_that_change_alone(officer):
    # Push bodies may carry inline photo pictures up to the 1 MiB document limit, so a long
    # string is refused by the collection's schema, with its path, not by the parser.
    before = counts()
    r = send(officer, PUSH, push_body([report_change({"vessel": {"name": "x" * (256 * 1024 + 1), "homePort": "P",
                                                                 "nationality": "GA", "permitNumber": "1"}})]))
    assert r.status_code == 200, r.text[:300]
    result = r.json()["results"][0]
    assert result["status"] == "rejected" and result["error"]["code"] == "invalid"
    assert result["error"]["path"].endswith("/vessel/name")
    # Nothing written but the push log's record of this first outcome (for retries).
    after = counts()
    push_log = PUSH_LOG_INDEX
    assert after[:push_log] + after[push_log + 1:] == before[:push_log] + before[push_log + 1:]
    assert after[push_log] == before[push_log] + 1


def test_depth_32_is_still_accepted(officer):
    # The limit is exactly 32: a document reaching depth 32 is parsed (then judged by its schema).
    r = send(officer, PULL, '{"partitions": {}, "limit": ' + nested(31) + "}")
    error_of(r, 400, "bad_request")
    assert "limit" in r.json()["error"]["message"]


def test_wrong_media_type_and_missing_token(officer):
    before = counts()
    error_of(send(officer, PUSH, push_body([report_change()]), "text/plain"), 415, "unsupported_media_type")
    r = requests.post(URL + PUSH, data=push_body([report_change()]), verify=CA,
                      headers={"Content-Type": "application/json"})
    error_of(r, 401, "unauthenticated")
    r = requests.post(URL + PULL, json={"partitions": {}}, verify=CA, headers={"Authorization": "Bearer nope"})
    error_of(r, 401, "unauthenticated")
    assert counts() == before


def test_more_than_1000_changes_is_too_large(officer):
    before = counts()
    error_of(send(officer, PUSH, push_body([report_change() for _ in range(1001)])), 413, "too_large")
    assert counts() == before


def test_a_body_above_16_mib_is_refused_by_nginx_as_json(officer):
    before = counts()
    big = push_body([report_change({"vessel": {"name": "x" * 200_000}}) for _ in range(90)])
    assert len(big) > 16 * 1024 * 1024
    error_of(send(officer, PUSH, big), 413, "too_large")
    assert counts() == before


def test_a_document_above_1_mib_is_rejected_alone(officer):
    big = report_change({"notes": [{"note": "x" * 200_000} for _ in range(6)]})
    small = report_change()
    results = officer.push([big, small])
    assert results[0]["status"] == "rejected" and results[0]["error"]["code"] == "too_large"
    assert results[1]["status"] == "applied"


def test_bad_partitions_in_pull_and_push(officer):
    answer = officer.pull({"agency=": None, "user=a=b": None, "foo": None, "agency=Nope": None,
                           "agency=Gabon/x": None, "agency=Gabon": None}, limit=1)
    assert answer["agency="] == answer["user=a=b"] == answer["foo"] == answer["agency=Gabon/x"] == {"status": "invalid"}
    assert answer["agency=Nope"] == {"status": "forbidden"}
    assert answer["agency=Gabon"]["status"] == "ok"
    before = counts()
    changes = []
    for p in ["agency=", "user=a=b", "foo", "agency= Gabon", "=Gabon"]:
        d = f"bp-{uuid.uuid4().hex}"
        changes.append(change("insert", "reports", p, d, doc_for("reports", d)))
    d = f"bp-{uuid.uuid4().hex}"
    changes.append(change("insert", "reports", "agency=Nope", d, doc_for("reports", d)))
    results = officer.push(changes, client_id=None)
    assert [r["error"]["code"] for r in results] == ["invalid"] * 5 + ["forbidden"]
    after = counts()
    assert after[:PUSH_LOG_INDEX] == before[:PUSH_LOG_INDEX] and after[PUSH_LOG_INDEX + 1:] == before[PUSH_LOG_INDEX + 1:]  # only the push log grew


def flip(cursor, index):
    raw = bytearray(base64.urlsafe_b64decode(cursor[2:] + "=" * (-len(cursor[2:]) % 4)))
    raw[index] ^= 0x01
    return "c:" + base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


def test_forged_foreign_and_garbage_cursors_are_400(officer):
    answer = officer.pull({"agency=Gabon": None, "all-users=all-the-users": None}, limit=5)
    cursor = answer["agency=Gabon"]["cursor"]
    foreign = answer["all-users=all-the-users"]["cursor"]
    raw_len = len(base64.urlsafe_b64decode(cursor[2:] + "=" * (-len(cursor[2:]) % 4)))
    forged = [flip(cursor, i) for i in range(raw_len)]
    garbage = ["", "c:", "c:AAAA", "x:" + cursor[2:], cursor + "A", cursor[:-1], "c:" + "A" * 700, "null", "c:!!!!"]
    before = counts()
    # Another partition's genuine cursor is foreign here.
    error_of(officer.pull_raw({"agency=Gabon": foreign}), 400, "bad_request")
    for bad in forged + garbage:
        r = officer.pull_raw({"agency=Gabon": bad})
        error_of(r, 400, "bad_request")
        # One bad cursor fails the whole pull: no other partition's data leaks alongside.
        r = officer.pull_raw({"agency=Gabon": None, "all-users=all-the-users": bad})
        error_of(r, 400, "bad_request")
    assert counts() == before
    # The genuine cursor still works.
    assert officer.pull({"agency=Gabon": cursor}, limit=5)["agency=Gabon"]["status"] == "ok"


def test_a_cursor_of_another_user_partition_is_refused():
    one, two = Client("gabon.officer1@demo.tideway"), Client("gabon.officer2@demo.tideway")
    mine = one.pull({f"user={one.id}": None})[f"user={one.id}"]
    r = two.pull_raw({f"user={two.id}": mine["cursor"]})
    error_of(r, 400, "bad_request")
