"""/metrics is one view of every process (issue 20): scrapes through nginx, whichever worker
answers, agree; counters never go backwards while workers are killed and replaced; every
metric the Grafana dashboard and the Prometheus alert rules name exists."""
import json
import os
import re
import signal
import threading
import time
import uuid

import yaml

from conftest import STATE, api, login, new_user, worker_pids
from synclib import change, doc_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATIENCE = 30
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def scrape():
    r = api("GET", "/metrics")
    assert r.status_code == 200, r.text
    return parse(r.text)


def parse(text):
    """{"types": {family: type}, "samples": {series key: value}} of a text-format scrape."""
    types, samples = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            m = SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            key = m.group(1) + (m.group(2) or "")
            assert key not in samples, f"series twice in one scrape: {key}"
            samples[key] = float(m.group(3))
    return {"types": types, "samples": samples}


def family(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def is_total(key, types):
    """Counters and histogram parts: what must never go backwards."""
    name = key.split("{", 1)[0]
    return types.get(family(name, types)) in ("counter", "histogram")


def push_pull(token, stop, errors):
    client = f"metrics-{uuid.uuid4()}"
    while not stop.is_set():
        doc_id = str(uuid.uuid4())
        r = api("POST", "/api/v1/sync/push", token,
                {"clientId": client, "changes": [change("insert", "reports", "agency=Gabon", doc_id,
                                                        doc_for("reports", doc_id))]})
        if r.status_code != 200 or r.json()["results"][0]["status"] != "applied":
            errors.append(r.status_code)
        r = api("POST", "/api/v1/sync/pull", token, {"partitions": {"agency=Gabon": None}, "limit": 5})
        if r.status_code != 200:
            errors.append(r.status_code)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_100_scrapes_are_monotonic_and_agree_while_workers_are_killed():
    access = login(new_user())["accessToken"]
    stop, errors = threading.Event(), []
    load = threading.Thread(target=push_pull, args=(access, stop, errors))
    load.start()
    scrapes, kills = [], []
    try:
        for i in range(100):
            scrapes.append(scrape())
            if i % 20 == 10:
                # A worker dies without a word (its file is all it leaves); its supervisor
                # starts another, which retires the dead one's totals at start.
                name = f"worker-{1 + len(kills) % 2}"
                before = worker_pids()[name]
                os.kill(before, signal.SIGKILL)
                deadline = time.monotonic() + PATIENCE
                while alive(before) or worker_pids().get(name) in (None, before):
                    assert time.monotonic() < deadline, f"{name} was not replaced"
                    time.sleep(0.01)
                kills.append(before)
    finally:
        stop.set()
        load.join(PATIENCE)
    assert len(kills) == 5

    previous = None
    for n, s in enumerate(scrapes):
        if previous:
            for key, value in previous["samples"].items():
                if not is_total(key, previous["types"]):
                    continue
                assert key in s["samples"], f"scrape {n}: {key} disappeared"
                assert s["samples"][key] >= value, f"scrape {n}: {key} went back from {value} to {s['samples'][key]}"
        previous = s
    # One view, not one worker's: every earlier scrape is counted by the next, whichever
    # worker answers it (each scrape is counted once it is answered).
    key = 'tideway_requests_total{method="GET",route="/metrics",status="200"}'
    counts = [s["samples"].get(key, 0) for s in scrapes]
    assert all(b >= a + 1 for a, b in zip(counts, counts[1:])), counts
    # The processes now alive: 2 workers (the last replacement may still be starting), the
    # job runner, the event publisher.
    deadline = time.monotonic() + PATIENCE
    while True:
        last = scrape()["samples"]
        if last['tideway_process_up{role="worker"}'] == len(worker_pids()) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert last['tideway_process_up{role="worker"}'] == len(worker_pids())
    assert last['tideway_process_up{role="jobs"}'] == 1
    assert last['tideway_process_up{role="events"}'] == 1
    assert last['tideway_push_changes_total{outcome="applied",code=""}'] > 0
    assert last['tideway_events_published_total{kind="change"}'] > 0
    assert last["tideway_database_up"] == 1
    # Histograms count requests, not fractions: every scrape was observed once.
    count = last['tideway_request_duration_seconds_count{method="GET",route="/metrics"}']
    assert count == int(count) and count >= len(scrapes)
    assert last['tideway_request_duration_seconds_bucket{method="GET",route="/metrics",le="+Inf"}'] == count
    # Dead workers' files are folded into one; only live processes keep files of their own.
    files = sorted(os.listdir(os.path.join(STATE, "metrics")))
    assert "retired.metrics" in files
    assert not [f for f in files if any(f"-{pid}-" in f for pid in kills)], files
    print(f"\n100 scrapes, {len(kills)} workers killed, load errors {sorted(set(errors))} "
          f"({len(errors)}), {len(last)} series in the last scrape")


def names_in(expression):
    return set(re.findall(r"\btideway_[a-z0-9_]+", expression))


def dashboard_expressions():
    with open(os.path.join(REPO, "Deploy/grafana/tideway.json")) as f:
        dashboard = json.load(f)
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str):
                found.append(node["expr"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(dashboard)
    return found


def test_every_metric_the_dashboard_and_alerts_name_exists():
    # One push and pull first, so that the series that come with the first one exist.
    access = login(new_user())["accessToken"]
    r = api("POST", "/api/v1/sync/pull", access, {"partitions": {"agency=Gabon": None}, "limit": 1})
    assert r.status_code == 200
    s = scrape()
    present = {family(k.split("{", 1)[0], s["types"]) for k in s["samples"]}

    expressions = dashboard_expressions()
    assert len(expressions) >= 10
    with open(os.path.join(REPO, "Deploy/prometheus/alerts.yml")) as f:
        rules = yaml.safe_load(f)
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    assert len(alerts) >= 5
    for rule in alerts:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", rule["alert"]), rule
        assert rule["labels"]["severity"] in ("page", "ticket"), rule
        assert rule["annotations"]["summary"], rule
        assert "for" not in rule or re.fullmatch(r"\d+[smh]", rule["for"]), rule
        assert balanced(rule["expr"]), rule["expr"]
    named = set()
    for expression in expressions + [rule["expr"] for rule in alerts]:
        named |= {family(n, s["types"]) for n in names_in(expression)}
    missing = sorted(n for n in named if n not in present)
    assert not missing, f"named by the dashboard or alerts but not in /metrics: {missing}"
    # And the other way: nothing /metrics shows is left off the dashboard.
    unused = sorted(n for n in present if n not in {family(x, s["types"]) for e in expressions for x in names_in(e)})
    assert not unused, f"in /metrics but on no dashboard panel: {unused}"


def balanced(expression):
    depth = {"(": ")", "[": "]", "{": "}"}
    stack = []
    for c in expression:
        if c in depth:
            stack.append(depth[c])
        elif c in depth.values():
            if not stack or stack.pop() != c:
                return False
    return not stack
