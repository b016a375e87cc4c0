"""Chat benchmark (issue 4). Bounded: fixed durations, loopback only."""
import multiprocessing
import os
import statistics
import subprocess
import time
import uuid

import psycopg2

from bench_support import https_session

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
ADMIN_DB = os.environ["BENCH_ADMIN_DATABASE"]
MEMBERS = 20
SENDERS = 8
SECONDS = 8
ROUNDS = 3


def post(session, path, token, body):
    r = session.post(URL + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    r.raise_for_status()
    return r.json()


def make_user():
    email = f"bench-{uuid.uuid4().hex[:10]}@bench.tideway"
    subprocess.run([".build/release/tideway", "create-user", "--database", ADMIN_DB, "--email", email,
                    "--first-name", "Bench", "--last-name", "User"],
                   check=True, capture_output=True, env={**os.environ, "TIDEWAY_PASSWORD": "bench-password"})
    r = https_session(CA).post(URL + "/api/v1/auth/login", json={"email": email, "password": "bench-password"})
    r.raise_for_status()
    return email, r.json()


def send_for(args):
    token, conv, seconds = args
    session = https_session(CA)
    client = "bench-" + uuid.uuid4().hex[:8]
    sent, n = 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        n += 1
        change = {"changeId": f"{client}-{n}", "collection": "chatMessages", "partition": f"conversation={conv}",
                  "id": f"{client}-{n}", "op": "insert", "doc": {"text": f"message {n}", "timestamp": "2026-11-21T10:00:00Z"}}
        result = post(session, "/api/v1/sync/push", token, {"clientId": client, "changes": [change]})["results"][0]
        sent += result["status"] == "applied"
    return sent


def rate(tokens, conv):
    with multiprocessing.Pool(SENDERS) as pool:
        counts = pool.map(send_for, [(tokens[i % len(tokens)], conv, SECONDS) for i in range(SENDERS)])
    return sum(counts) / SECONDS


def effects(enabled):
    with psycopg2.connect(ADMIN_DB) as db, db.cursor() as cur:
        cur.execute(f"alter table sync.chat_messages {'enable' if enabled else 'disable'} trigger chat_message_after_insert")


def latency(sender, reader, conv, samples=20):
    """Push by one member; another member's long poll (wait 30 s) returns with it."""
    s = https_session(CA)
    partition = f"conversation={conv}"
    # To the conversation's end: the throughput rounds leave more messages than a page holds
    # (10,000 at 400 msg/s), and a cursor short of the end makes each poll return at once with
    # old messages, before the push it is timing (negative latencies).
    cursor, more = None, True
    while more:
        page = post(s, "/api/v1/sync/pull", reader, {"partitions": {partition: cursor}, "limit": 10000})["partitions"][partition]
        cursor, more = page["cursor"], page["more"]
    pool = multiprocessing.Pool(1)
    waits = []
    for n in range(samples):
        pending = pool.apply_async(long_poll, (reader, partition, cursor))
        time.sleep(0.2)  # the poll is parked
        sent = time.monotonic()
        post(s, "/api/v1/sync/push", sender, {"clientId": "lat", "changes": [{
            "changeId": uuid.uuid4().hex, "collection": "chatMessages", "partition": partition, "id": uuid.uuid4().hex,
            "op": "insert", "doc": {"text": "ping", "timestamp": "2026-11-21T10:00:00Z"}}]})
        returned, cursor = pending.get(timeout=40)
        waits.append((returned - sent) * 1000)
    pool.close()
    return waits


def long_poll(token, partition, cursor):
    s = https_session(CA)
    while True:
        part = post(s, "/api/v1/sync/pull", token, {"partitions": {partition: cursor}, "wait": 30})["partitions"][partition]
        cursor = part["cursor"]
        if part["changes"]:
            return time.monotonic(), cursor


def main():
    users = [make_user() for _ in range(MEMBERS)]
    tokens = [u[1]["accessToken"] for u in users]
    owner = users[0][1]
    conv = "bench-" + uuid.uuid4().hex[:10]
    me = f"user={owner['user']['id']}"
    entry = {"id": conv, "displayName": "Bench", "unreadCount": 0, "members": [{"userName": u[0]} for u in users[1:]]}
    result = post(https_session(CA), "/api/v1/sync/push", owner["accessToken"], {"clientId": "setup", "changes": [{
        "changeId": "create", "collection": "users", "partition": me, "id": owner["user"]["id"], "op": "update",
        "patch": {"conversations": [entry]}}]})["results"][0]
    assert result["status"] == "applied", result
    with_effects, without = [], []
    try:
        for _ in range(ROUNDS):
            effects(True)
            with_effects.append(rate(tokens, conv))
            effects(False)
            without.append(rate(tokens, conv))
    finally:
        effects(True)
    waits = latency(tokens[1], tokens[2], conv)
    a, b = statistics.median(with_effects), statistics.median(without)
    print(f"messages/s into one conversation of {MEMBERS} members, {SENDERS} senders, medians of {ROUNDS} × {SECONDS} s:")
    print(f"  with unread counts kept    {a:8.1f} msg/s")
    print(f"  same pushes, no effects    {b:8.1f} msg/s")
    print(f"  ratio                      {a / b:8.2f}")
    waits.sort()
    print(f"member's long poll sees a new message: p50 {statistics.median(waits):.1f} ms, "
          f"p99 {waits[int(len(waits) * 0.99) - 1]:.1f} ms, max {waits[-1]:.1f} ms over {len(waits)} messages")


if __name__ == "__main__":
    main()
