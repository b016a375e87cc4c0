"""Event streams reconnecting after a node's nginx reloaded, in the cluster (nchan on Redis).
The one-host test (Tests/EndToEnd/test_events_after_reload.py) has the story: a reload ends
every open stream, each client reconnects with the Last-Event-ID of the last event it saw,
and nchan 1.3.6 failed an assertion on the second such reconnect to one set of channels,
killing the nginx worker. With Redis the events outlive a reload (nchan reads a channel's
held events from Redis when a node subscribes to it again), so the id may still be held;
this test checks the cluster's nginx the same way, and with an id Redis does not hold (one
older than every held event). Each stream has a channel of its own
(Deploy/nginx/tideway.conf.template, the /_events/ location); without it these reconnects
killed no worker in the cluster either: docs/performance/round-18.md,
"The cluster's cost of each stream's own channel"."""
import os
import signal
import sys
import threading
import time

from test_cluster import NODES, STATE, Stream, login, report, session

# The one-host tests' reading of nginx's processes and error log (Tests/EndToEnd).
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "EndToEnd"))
from nginx_instances import error_log_size, reloaded, worker_deaths_since  # noqa: E402


def reload_nginx(node):
    """The node's nginx reloaded (its master's SIGHUP), waited for until new workers accept."""
    with open(f"{STATE}/node-{node}/run/nginx.pid") as f:
        master = int(f.read().strip())
    reloaded(lambda: os.kill(master, signal.SIGHUP), of={node: master})


def error_log(node):
    return f"{STATE}/node-{node}/log/nginx-error.log"


def push(token, partition):
    r = session().post(f"{NODES['b']}/api/v1/sync/push", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                       json={"clientId": "reload-test", "changes": [report(f"reload-{time.time_ns()}", partition,
                                                                            f"c{time.time_ns()}")]})
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "applied", r.text


def reconnect_six(token, partition, last_id):
    """Two reconnects one after another (the second was the one that killed the worker),
    then four at once, all of one login and partition with the same id, on node A."""
    again = [Stream(NODES["a"], token, [partition], last_event_id=last_id) for _ in range(2)]
    opened = []
    threads = [threading.Thread(target=lambda: opened.append(Stream(NODES["a"], token, [partition],
                                                                    last_event_id=last_id)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return again + opened


def test_streams_reconnecting_after_a_nodes_reload_with_a_held_or_an_expired_id_hear_the_next_change():
    partition = "agency=Gabon"
    token = login(NODES["a"], "gabon.officer1@demo.tideway")
    writer = login(NODES["b"], "gabon.officer2@demo.tideway")
    stream = Stream(NODES["a"], token, [partition])
    time.sleep(1.0)  # the subscription reaches Redis
    push(writer, partition)
    event = stream.next(timeout=10)
    assert event is not None and event[1].get("id"), event
    held = event[1]["id"]
    # The same form with a time long past: older than every event Redis holds (they expire
    # after 15 minutes); nchan answers it with the oldest it holds.
    expired = "1600000000:" + held.split(":", 1)[1]
    offset = error_log_size(error_log("a"))
    reload_nginx("a")
    stream.close()
    streams = []
    try:
        for last_id in (held, expired):
            streams += reconnect_six(token, partition, last_id)
        time.sleep(1.0)
        push(writer, partition)
        for s in streams:
            got = s.next(timeout=10)
            assert got is not None and f'"{partition}"' in got[1]["data"], got
        assert not worker_deaths_since(offset, error_log("a")), "an nginx worker of node A died"
    finally:
        for s in streams:
            s.close()
