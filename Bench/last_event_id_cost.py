"""What the worker's check of a reconnect's Last-Event-ID costs a stream's open
(docs/performance/round-18.md, "A stream's Last-Event-ID checked by the worker"):
legs of stream opens without an id and with one (the stream's own, as a reconnect sends it),
alternated A B B A ..., each open sequential: the client's time to the answer's headers, and
the worker's own time for the request (durationMs of its log line, found by X-Request-Id).

Usage (a running stack; TIDEWAY_TEST_* as for the end-to-end tests, run from
Tests/EndToEnd so that its helpers import):
    python3 ../../Bench/last_event_id_cost.py [opens per leg] [rounds]"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
from conftest import STATE, login, new_user  # noqa: E402
from test_events import Stream  # noqa: E402
from test_events_last_id import an_event_id  # noqa: E402

OPENS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def worker_ms(request_ids):
    found = {}
    for name in os.listdir(os.path.join(STATE, "log")):
        if name.startswith("worker-"):
            with open(os.path.join(STATE, "log", name)) as f:
                for line in f:
                    if '"/api/v1/sync/events"' in line:
                        entry = json.loads(line)
                        if entry.get("requestId") in request_ids:
                            found[entry["requestId"]] = entry["durationMs"]
    return [found[r] for r in request_ids if r in found]


def leg(token, last_id):
    walls, ids = [], []
    for _ in range(OPENS):
        start = time.perf_counter()
        stream = Stream(token, ["agency=Gabon"], last_event_id=last_id)
        walls.append((time.perf_counter() - start) * 1000)
        assert stream.status == 200, stream.status
        ids.append(stream.response.headers["X-Request-Id"])
        stream.hang_up()
    return walls, ids


def main():
    token = login(new_user(agency="Gabon"))["accessToken"]
    last_id = an_event_id(token, ["agency=Gabon"])
    legs = {"none": ([], []), "id": ([], [])}
    order = ["none", "id", "id", "none"] * ROUNDS
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()}, id {last_id}, "
          f"{OPENS} opens a leg, legs {' '.join(order)}")
    for kind in order:
        walls, ids = leg(token, last_id if kind == "id" else None)
        legs[kind][0].extend(walls)
        legs[kind][1].extend(ids)
    time.sleep(0.5)  # the log lines written
    for kind, (walls, ids) in legs.items():
        worker = worker_ms(ids)
        print(f"{kind:5} opens {len(walls)}: headers median {statistics.median(walls):.2f} ms, "
              f"p90 {statistics.quantiles(walls, n=10)[-1]:.2f} ms; worker median "
              f"{statistics.median(worker) * 1000:.0f} µs ({len(worker)} lines)")
    print(f"end {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()}")


if __name__ == "__main__":
    main()
