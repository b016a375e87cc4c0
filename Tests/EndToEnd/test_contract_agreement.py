"""docs/openapi.yaml and the server agree on which requests are acceptable (issue 20,
defect 7): fixed probes of the disagreements found (a NUL character, null limit and wait, a
number as appVersion, an unknown collection), then a seeded, bounded run of generated
requests in the style of schemathesis — valid pull and push bodies mutated one place at a
time (wrong types, missing and unknown fields, out-of-range numbers, NUL characters).

Agreement means:
- a body the request schema accepts is answered 200;
- a body whose top level the schema refuses is answered 4xx;
- in a push, a change the schema refuses (PushedChange) is that change's `rejected` (the
  others go on), or the whole body is a 4xx;
- nothing is ever a 5xx.
"""
import copy
import json
import os
import random
import uuid

import jsonschema
import pytest
import requests
import yaml

from conftest import CA, URL, login

SPEC_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "openapi.yaml")
# Requests per operation, seeded so that every run sends the same ones (a few seconds).
# TIDEWAY_FUZZ_COUNT and TIDEWAY_FUZZ_SEED run longer or other series by hand.
GENERATED = int(os.environ.get("TIDEWAY_FUZZ_COUNT", "300"))
SEED = int(os.environ.get("TIDEWAY_FUZZ_SEED", "20"))


@pytest.fixture(scope="module")
def spec():
    with open(SPEC_PATH) as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def access():
    return login("gabon.officer1@demo.tideway")["accessToken"]


def validator(spec, name, override=None):
    schema = copy.deepcopy(spec["components"]["schemas"][name])
    if override:
        override(schema)
    return jsonschema.Draft202012Validator({"$schema": "https://json-schema.org/draft/2020-12/schema",
                                            "components": spec["components"], "allOf": [schema]})


def send(access, path, body):
    return requests.post(URL + path, data=json.dumps(body), verify=CA, timeout=60,
                         headers={"Content-Type": "application/json", "Authorization": f"Bearer {access}"})


def judge_pull(spec, access, body):
    valid = validator(spec, "PullRequest").is_valid(body)
    r = send(access, "/api/v1/sync/pull", body)
    assert r.status_code < 500, (body, r.status_code, r.text[:300])
    if valid:
        assert r.status_code == 200, f"the spec accepts it, the server refused it: {json.dumps(body)} → {r.text[:300]}"
    else:
        assert 400 <= r.status_code < 500, \
            f"the spec refuses it, the server accepted it: {json.dumps(body)} → {r.text[:300]}"


def judge_push(spec, access, body):
    def any_changes(schema):
        schema["properties"]["changes"] = {**schema["properties"]["changes"], "items": True}
    top_valid = validator(spec, "PushRequest", any_changes).is_valid(body)
    change_schema = validator(spec, "PushedChange")
    r = send(access, "/api/v1/sync/push", body)
    assert r.status_code < 500, (body, r.status_code, r.text[:300])
    if not top_valid:
        assert 400 <= r.status_code < 500, ("the spec refuses it, the server accepted it", body, r.text[:300])
        return
    changes = body["changes"]
    valid_changes = [change_schema.is_valid(c) for c in changes]
    if all(valid_changes):
        assert r.status_code == 200, ("the spec accepts it, the server refused it", body, r.text[:300])
    elif r.status_code == 200:
        results = r.json()["results"]
        for change, valid, result in zip(changes, valid_changes, results):
            if not valid:
                assert result["status"] == "rejected", ("the spec refuses this change, the server applied it",
                                                        change, result)
    else:
        assert 400 <= r.status_code < 500, (body, r.text[:300])


def report_change():
    rid = f"agree-{uuid.uuid4().hex}"
    return {"changeId": uuid.uuid4().hex, "collection": "reports", "partition": "agency=Gabon", "id": rid,
            "op": "insert", "doc": {"_id": rid, "timestamp": "2026-03-01T10:00:00Z", "draft": True,
                                    "notes": [{"note": "fine"}]}}


def push_body():
    return {"clientId": uuid.uuid4().hex, "appVersion": "1.0", "changes": [report_change(), report_change()]}


def pull_body():
    return {"partitions": {"agency=Gabon": None, "user=00000000-0000-0000-0000-000000000000": None},
            "limit": 5, "wait": 0, "clientId": uuid.uuid4().hex}


PROBES = {
    "nul in a document string": ("push", lambda b: b["changes"][0]["doc"]["notes"][0].update(note="a\u0000b")),
    "nul in a document key": ("push", lambda b: b["changes"][0]["doc"].update({"a\u0000b": 1})),
    "nul in clientId": ("push", lambda b: b.update(clientId="a\u0000b")),
    "unknown collection": ("push", lambda b: b["changes"][0].update(collection="nope")),
    "appVersion null": ("push", lambda b: b.update(appVersion=None)),
    "limit null": ("pull", lambda b: b.update(limit=None)),
    "wait null": ("pull", lambda b: b.update(wait=None)),
    "nul in a partition name": ("pull", lambda b: b["partitions"].update({"agency=a\u0000b": None})),
    "nul in pull clientId": ("pull", lambda b: b.update(clientId="a\u0000b")),
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probes_of_past_disagreements(spec, access, name):
    kind, mutate = PROBES[name]
    body = push_body() if kind == "push" else pull_body()
    mutate(body)
    (judge_push if kind == "push" else judge_pull)(spec, access, body)


@pytest.mark.parametrize("value", [5, {"k": "v"}, True])
def test_an_app_version_that_is_not_a_string_is_refused(spec, access, value):
    body = push_body()
    body["appVersion"] = value
    judge_push(spec, access, body)


# The generated run.

ODD_VALUES = [None, 0, -1, 5, 1.5, 10001, True, "", "x", "a\u0000b", [], {}, ["x"], {"k": "v"},
              "agency=Gabon", "reports", "insert", "nope", "x" * 300]


def places(value, path=()):
    """Every (container path, key) in a JSON value, for mutation."""
    out = []
    if isinstance(value, dict):
        for key, child in value.items():
            out.append((path, key))
            out += places(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.append((path, index))
            out += places(child, path + (index,))
    return out


def mutate(body, rng):
    body = copy.deepcopy(body)
    path, key = rng.choice(places(body))
    parent = body
    for step in path:
        parent = parent[step]
    action = rng.random()
    if action < 0.15 and isinstance(parent, dict):
        del parent[key]
    elif action < 0.25 and isinstance(parent, dict):
        parent[rng.choice(["extra", "unknown", "a\u0000b"])] = rng.choice(ODD_VALUES)
    else:
        value = rng.choice(ODD_VALUES)
        # A long poll would make a valid body wait up to 30 s: generated waits stay at 0 or invalid.
        if key == "wait" and isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 30:
            value = 0
        parent[key] = value
    return body


def test_generated_pull_bodies(spec, access):
    rng = random.Random(SEED)
    for _ in range(GENERATED):
        judge_pull(spec, access, mutate(pull_body(), rng))


def test_generated_push_bodies(spec, access):
    rng = random.Random(SEED + 1)
    for _ in range(GENERATED):
        judge_push(spec, access, mutate(push_body(), rng))
