"""docs/openapi.yaml stays true: real answers of every operation, for every status the
spec documents (except 503, which needs the database down), validate against the spec's
response schemas, and every answer the server gives here is documented."""
import json
import os
import uuid

import jsonschema
import pytest
import requests
import yaml

from conftest import CA, URL, login, new_user
from synclib import Client, change, doc_for, new_team

SPEC_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "openapi.yaml")
UNTESTABLE = {"503"}  # only with the database unreachable


@pytest.fixture(scope="module")
def spec():
    with open(SPEC_PATH) as f:
        document = yaml.safe_load(f)
    assert document["openapi"].startswith("3.1")
    jsonschema.Draft202012Validator.check_schema({"$defs": document["components"]["schemas"]})
    return document


def operation(spec, path, method):
    return spec["paths"][path][method]


def response_spec(spec, path, method, status):
    responses = operation(spec, path, method)["responses"]
    assert str(status) in responses, f"{method.upper()} {path} answered {status}, which the spec does not document"
    r = responses[str(status)]
    if "$ref" in r:
        r = spec["components"]["responses"][r["$ref"].rsplit("/", 1)[1]]
    return r


def check(spec, path, method, r):
    """Validates one real response against the spec; answers the status checked."""
    documented = response_spec(spec, path, method, r.status_code)
    content = documented.get("content")
    if content is None:
        assert r.content == b"", r.content
        return r.status_code
    media = r.headers["Content-Type"].split(";")[0].strip()
    assert media in content, (path, r.status_code, media)
    body = r.json() if media == "application/json" else r.text
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "components": spec["components"],
              "allOf": [content[media]["schema"]]}
    jsonschema.Draft202012Validator(schema).validate(body)
    for name, header in documented.get("headers", {}).items():
        if header.get("required"):
            assert name in r.headers, name
            jsonschema.Draft202012Validator(header["schema"]).validate(r.headers[name])
    return r.status_code


def post(path, body=None, token=None, raw=None, content_type="application/json"):
    headers = {"Content-Type": content_type}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = raw if raw is not None else json.dumps(body)
    return requests.post(URL + path, data=data, headers=headers, verify=CA, timeout=120)


def get(path, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(URL + path, headers=headers, verify=CA, timeout=60)


def test_every_operation_and_status_matches_the_spec(spec):
    seen = set()

    def record(path, method, r):
        seen.add((path, method, str(check(spec, path, method, r))))

    L, RF, LO = "/api/v1/auth/login", "/api/v1/auth/refresh", "/api/v1/auth/logout"
    P, PL, PU, H = "/api/v1/sync/partitions", "/api/v1/sync/pull", "/api/v1/sync/push", "/healthz"
    email = new_user(agency="Gabon")
    record(L, "post", post(L, {"email": email, "password": "tideway-demo", "device": "openapi test"}))
    record(L, "post", post(L, raw="{"))
    record(L, "post", post(L, {"email": email, "password": "wrong password"}))
    record(L, "post", post(L, {"email": email, "password": "x"}, content_type="text/plain"))
    limited = new_user(agency="Gabon")
    for _ in range(10):
        r = post(L, {"email": limited, "password": "wrong password"})
        if r.status_code == 429:
            break
    record(L, "post", r)

    pair = login(email)
    record(RF, "post", post(RF, {"refreshToken": pair["refreshToken"]}))
    record(RF, "post", post(RF, {"refresh": "x"}))
    record(RF, "post", post(RF, {"refreshToken": pair["refreshToken"]}))  # spent: 401
    record(RF, "post", post(RF, raw="{}", content_type="text/plain"))

    token = login(email)["accessToken"]
    record(P, "get", get(P, token))
    record(P, "get", get(P))

    E = "/api/v1/sync/events"
    stream = requests.get(URL + E, params={"partition": "agency=Gabon"}, verify=CA, timeout=60, stream=True,
                          headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"})
    with stream:  # its body never ends: the status and media type alone
        assert stream.status_code == 200
        assert stream.headers["Content-Type"].split(";")[0] in response_spec(spec, E, "get", 200)["content"]
        seen.add((E, "get", "200"))
    record(E, "get", requests.get(URL + E, params={"partition": "agency=Gabon"}, verify=CA, timeout=60,
                                  headers={"Authorization": f"Bearer {token}", "Last-Event-ID": "1795799633:-,[0"}))
    record(E, "get", get(E + "?partition=agency%3DGabon"))
    record(E, "get", get(E + "?partition=agency%3DWildAid", token))

    officer = Client(email)
    first = officer.pull({"agency=Gabon": None, "agency=WildAid": None, "foo": None}, limit=3)
    r = post(PL, {"partitions": {"agency=Gabon": first["agency=Gabon"]["cursor"], "agency=WildAid": None,
                                 "foo": None}, "limit": 3}, token)
    record(PL, "post", r)
    statuses = {e["status"] for e in r.json()["partitions"].values()}
    assert statuses == {"ok", "forbidden", "invalid"}
    record(PL, "post", post(PL, {"partitions": {"agency=Gabon": "c:forged"}}, token))
    record(PL, "post", post(PL, {"partitions": {}}))
    record(PL, "post", post(PL, raw="{}", token=token, content_type="text/plain"))
    record(PL, "post", post(PL, raw='{"partitions": {}, "pad": "' + "x" * (17 * 1024 * 1024) + '"}', token=token))

    d = f"oa-{uuid.uuid4().hex}"
    batch = [change("insert", "reports", "agency=Gabon", d, doc_for("reports", d)),
             change("update", "reports", "agency=Gabon", d, {"draft": False}),
             change("insert", "reports", "agency=WildAid", d + "x", doc_for("reports", d + "x")),
             change("insert", "reports", "agency=Gabon", d + "y", {"_id": d + "y", "timestamp": 5}),
             change("delete", "reports", "agency=Gabon", "missing-" + d)]
    body = {"clientId": uuid.uuid4().hex, "changes": batch}
    r = post(PU, body, token)
    record(PU, "post", r)
    assert [x["status"] for x in r.json()["results"]] == ["applied", "applied", "rejected", "rejected", "rejected"]
    assert r.json()["results"][3]["error"]["path"] == "/timestamp"
    r = post(PU, body, token)
    record(PU, "post", r)
    assert [x["status"] for x in r.json()["results"]][:2] == ["duplicate", "duplicate"]
    record(PU, "post", post(PU, {"clientId": "x", "changes": "no"}, token))
    record(PU, "post", post(PU, {"clientId": "x", "changes": []}))
    record(PU, "post", post(PU, raw="{}", token=token, content_type="text/plain"))
    record(PU, "post", post(PU, {"clientId": "x", "changes": [batch[0]] * 1001}, token))

    record(H, "get", get(H))

    # Teams and grants: a team of Gabon's admin, a reader, and every documented answer.
    G, MG = "/api/v1/grants", "/api/v1/me/grants"
    admin = Client("gabon.admin@demo.tideway")
    team = new_team(admin.email, "Gabon", "OpenAPI crew")
    reader = Client(new_user(agency="Gabon"))

    def grants(method, client=None, params=None, body=None, raw=None, content_type="application/json"):
        headers = {"Content-Type": content_type}
        if client:
            headers["Authorization"] = f"Bearer {client.token}"
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        return requests.request(method, URL + G, params=params, data=data, headers=headers, verify=CA, timeout=60)

    def grant_body(who, right):
        return {"partition": team, "grantee": {"kind": "user", "id": who}, "right": right}

    record(G, "put", grants("PUT", admin, body=grant_body(reader.id, "read")))
    record(G, "put", grants("PUT", admin, raw="{"))
    record(G, "put", grants("PUT", None, body=grant_body(reader.id, "read")))
    record(G, "put", grants("PUT", reader, body=grant_body(reader.id, "manage")))
    record(G, "put", grants("PUT", admin, body=grant_body(str(uuid.uuid4()), "read")))
    record(G, "put", grants("PUT", admin, body=grant_body(admin.id, "read")))  # the last manager: 409
    record(G, "put", grants("PUT", admin, raw="{}", content_type="text/plain"))
    record(G, "put", grants("PUT", admin, body=grant_body(reader.id, "owner")))
    record(G, "get", grants("GET", admin, params={"partition": team}))
    record(G, "get", grants("GET", admin))
    record(G, "get", grants("GET", None, params={"partition": team}))
    record(G, "get", grants("GET", reader, params={"partition": team}))
    record(G, "get", grants("GET", admin, params={"partition": f"team={uuid.uuid4()}"}))
    record(G, "get", grants("GET", admin, params={"partition": "team=crew"}))
    record(G, "delete", grants("DELETE", reader, params={"partition": team, "kind": "user", "id": admin.id}))
    record(G, "delete", grants("DELETE", admin, params={"partition": team, "kind": "user", "id": admin.id}))
    record(G, "delete", grants("DELETE", admin, params={"kind": "user", "id": reader.id}))
    record(G, "delete", grants("DELETE", None, params={"partition": team, "kind": "user", "id": reader.id}))
    record(G, "delete", grants("DELETE", admin, params={"partition": team, "kind": "robot", "id": reader.id}))
    record(MG, "get", get(MG, reader.token))
    record(MG, "get", get(MG))
    record(G, "delete", grants("DELETE", admin, params={"partition": team, "kind": "user", "id": reader.id}))
    record(G, "delete", grants("DELETE", admin, params={"partition": team, "kind": "user", "id": reader.id}))  # 404

    record(LO, "post", post(LO, raw="", token=token))
    record(LO, "post", post(LO, raw="", token=token))  # the token no longer works: 401

    documented = {(path, method, status) for path, ops in spec["paths"].items() for method, op in ops.items()
                  for status in op["responses"] if status not in UNTESTABLE}
    assert documented - seen == set(), "documented but never checked against a real answer"
