"""The cluster of Deploy/cluster/cluster.sh, driven as real processes: two app nodes in
their own network namespaces, PostgreSQL primary + streaming replica and Redis on a third.
Run by Deploy/cluster/test.sh (`make test-cluster`), which brings the cluster up and
exports where it is. The tests run in file order: the last one promotes the replica.
"""
import os
import queue
import socket
import statistics
import subprocess
import threading
import time
import uuid
import urllib.parse

import psycopg2
import pytest
import requests

STATE = os.environ.get("TIDEWAY_CLUSTER_STATE")
if not STATE:
    pytest.skip("no cluster (run through `make test-cluster`)", allow_module_level=True)

FRONT = os.environ["TIDEWAY_CLUSTER_URL"]
NODES = {"a": os.environ["TIDEWAY_CLUSTER_NODE_A"], "b": os.environ["TIDEWAY_CLUSTER_NODE_B"]}
CA = f"{STATE}/tls/ca.crt"
CLUSTER = os.environ["TIDEWAY_CLUSTER_SCRIPT"]
PRIMARY_DB = f"host={STATE}/db/run port=5432 dbname=tideway user=postgres"
REPLICA_DB = f"host={STATE}/db/run port=5433 dbname=tideway user=postgres"
TS = "2024-05-01T10:00:00Z"


def figure(text):
    """Measured figures go to a file the runner prints at the end (and to stdout)."""
    print(text)
    with open(f"{STATE}/figures.txt", "a") as f:
        f.write(text + "\n")


def session():
    s = requests.Session()
    s.trust_env = False
    s.verify = CA
    return s


def login(base, email):
    r = session().post(f"{base}/api/v1/auth/login", json={"email": email, "password": "tideway-demo"}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["accessToken"]


def report(doc_id, partition, change_id):
    return {"changeId": change_id, "collection": "reports", "partition": partition, "id": doc_id, "op": "insert",
            "doc": {"_id": doc_id, "timestamp": TS, "draft": True}}


def sql(conninfo, query, *args):
    with psycopg2.connect(conninfo) as conn, conn.cursor() as cur:
        cur.execute(query, args)
        return cur.fetchall() if cur.description else []


def cluster(*args):
    subprocess.run([CLUSTER, *args], check=True, stdout=subprocess.DEVNULL)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


class Stream:
    """An SSE stream on one node, read on a thread; events (with the time they came) to a queue."""

    def __init__(self, base, token, partitions, last_event_id=None):
        query = "&".join("partition=" + requests.utils.quote(p, safe="") for p in partitions)
        headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {token}"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        self.response = session().get(f"{base}/api/v1/sync/events?{query}", stream=True, timeout=(10, 120),
                                      headers=headers)
        assert self.response.status_code == 200, self.response.text
        self.events = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        event = {}
        try:
            for raw in self.response.iter_lines(chunk_size=1, decode_unicode=True):
                if raw == "":
                    if "data" in event:
                        self.events.put((time.monotonic(), event))
                    event = {}
                elif raw and not raw.startswith(":"):
                    field, _, value = raw.partition(":")
                    event[field] = value.lstrip()
        except Exception:
            pass
        self.events.put(None)

    def next(self, timeout=10):
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self):
        # close() alone waits until the reading thread's read returns, at the next keep-alive
        # comment (25 s): shutting the socket down ends that read at once.
        try:
            self.response.raw._fp.fp.raw._sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass
        self.response.close()


def wait_for_leader(timeout=30):
    """The node whose `tideway events` holds the leader lock (pg_locks on the primary)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = sql(PRIMARY_DB, """select client_addr::text from pg_locks l join pg_stat_activity a using (pid)
                                  where l.locktype = 'advisory' and l.granted and l.objid = hashtext('tideway-events')::oid""")
        if rows:
            address = rows[0][0].split("/")[0]
            # The nodes' addresses as test.sh gives them (CLUSTER_NET may move the /24).
            return next((name for name, url in NODES.items() if urllib.parse.urlsplit(url).hostname == address), address)
        time.sleep(0.2)
    return None


def test_the_replica_streams_from_the_primary_through_its_slot():
    rows = sql(PRIMARY_DB, "select state from pg_stat_replication")
    assert rows == [("streaming",)]
    assert sql(PRIMARY_DB, "select active from pg_replication_slots where slot_name = 'tideway_replica'") == [(True,)]
    assert sql(REPLICA_DB, "select pg_is_in_recovery()") == [(True,)]
    doc_id = f"repl-{uuid.uuid4().hex}"
    token = login(FRONT, "gabon.officer1@demo.tideway")
    r = session().post(f"{FRONT}/api/v1/sync/push", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                       json={"clientId": uuid.uuid4().hex, "changes": [report(doc_id, "agency=Gabon", "c1")]})
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "applied", r.text
    deadline = time.monotonic() + 10
    while not sql(REPLICA_DB, "select 1 from sync.reports where id = %s", doc_id):
        assert time.monotonic() < deadline, "the replica did not replay the push within 10 s"
        time.sleep(0.05)


def replica_transactions():
    return sql(REPLICA_DB, "select xact_commit from pg_stat_database where datname = 'tideway'")[0][0]


def test_pulls_are_answered_by_the_replica():
    """Full pulls (not the one-statement idle check) run on the replica once it has replayed
    the primary's position: its own transaction counter moves while they run."""
    token = login(FRONT, "gabon.officer1@demo.tideway")
    s = session()
    before = replica_transactions()
    for _ in range(20):
        r = s.post(f"{FRONT}/api/v1/sync/pull", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                   json={"partitions": {"agency=Gabon": None}, "limit": 5})
        assert r.status_code == 200 and r.json()["partitions"]["agency=Gabon"]["status"] == "ok", r.text
    # The workers' own count: some worker process says it answered pulls from the replica.
    admin, served = login(FRONT, "admin@demo.tideway"), 0
    for base in list(NODES.values()) * 8:
        m = s.get(f"{base}/metrics", headers={"Authorization": f"Bearer {admin}"}, timeout=30)
        assert m.status_code == 200, m.text
        for line in m.text.splitlines():
            if line.startswith('tideway_replica_reads_total{served_by="replica"}'):
                served = max(served, int(line.split()[-1]))
    assert served > 0, "no worker answered a pull from the replica"
    # And the replica's own counter: each pull there is a check and a transaction (two),
    # counted within PostgreSQL's statistics flush interval (up to 10 s when idle).
    deadline = time.monotonic() + 25
    while replica_transactions() < before + 40:
        assert time.monotonic() < deadline, f"the replica ran {replica_transactions() - before} transactions for 20 pulls"
        time.sleep(0.5)


def pull_all(s, token, partition, cursor):
    """Pages until `more` is false: the changes (collection, id) in order, and the last cursor."""
    seen = []
    while True:
        r = s.post(f"{FRONT}/api/v1/sync/pull", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                   json={"partitions": {partition: cursor}, "limit": 200})
        assert r.status_code == 200, r.text
        part = r.json()["partitions"][partition]
        assert part["status"] == "ok", part
        seen += [(c["collection"], c["id"]) for c in part["changes"]]
        cursor = part["cursor"]
        if not part["more"]:
            return seen, cursor


def test_a_lagging_replica_never_hides_a_clients_own_push_nor_moves_its_cursor_back():
    """Replay paused on purpose: the replica falls behind, and every pull that follows a push
    still shows that push (the primary answers once the replica has not caught up within
    TIDEWAY_REPLICA_WAIT_MS). No pull returns a change the client already had (a cursor gone
    back would). After replay resumes, the replica answers again and nothing was lost."""
    token = login(FRONT, "gabon.officer2@demo.tideway")
    s, client = session(), uuid.uuid4().hex
    _, cursor = pull_all(s, token, "agency=Gabon", None)
    had = set()
    sql(REPLICA_DB, "select pg_wal_replay_pause()")
    try:
        pushed = []
        for i in range(6):
            doc_id = f"lag-{uuid.uuid4().hex}"
            r = s.post(f"{FRONT}/api/v1/sync/push", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                       json={"clientId": client, "changes": [report(doc_id, "agency=Gabon", f"lag{i}")]})
            assert r.status_code == 200 and r.json()["results"][0]["status"] == "applied", r.text
            pushed.append(doc_id)
            seen, cursor = pull_all(s, token, "agency=Gabon", cursor)
            assert ("reports", doc_id) in seen, f"push {i} not in the next pull"
            assert not had & set(seen), "a pull repeated changes: its cursor went back"
            had |= set(seen)
        behind = sql(PRIMARY_DB, """select pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) from pg_stat_replication""")
        assert behind and behind[0][0] > 0, "the replica was not behind: the test proved nothing"
        assert not sql(REPLICA_DB, "select 1 from sync.reports where id = any(%s)", pushed), "replay was not paused"
    finally:
        sql(REPLICA_DB, "select pg_wal_replay_resume()")
    deadline = time.monotonic() + 20
    while len(sql(REPLICA_DB, "select 1 from sync.reports where id = any(%s)", pushed)) != len(pushed):
        assert time.monotonic() < deadline, "the replica did not catch up within 20 s"
        time.sleep(0.1)
    seen, _ = pull_all(s, token, "agency=Gabon", None)
    assert {("reports", d) for d in pushed} <= set(seen)


def test_one_event_publisher_leads_and_the_other_waits():
    leader = wait_for_leader()
    assert leader in ("a", "b")
    waiting = sql(PRIMARY_DB, """select count(*) from pg_locks where locktype = 'advisory' and not granted
                                 and objid = hashtext('tideway-events')::oid""")
    assert waiting == [(1,)], "the other node's publisher should wait for the lock"


def test_a_push_through_a_reaches_a_stream_and_a_long_poll_on_b():
    """Commit on node A -> event on an SSE stream held by node B's nchan (through Redis),
    and the answer of a long poll waiting on node B. Latency from the push's answer."""
    partition = "agency=Gabon"
    token_a = login(NODES["a"], "gabon.officer1@demo.tideway")
    token_b = login(NODES["b"], "gabon.officer2@demo.tideway")
    stream = Stream(NODES["b"], token_b, [partition])
    time.sleep(1.0)  # the subscription reaches Redis
    # Where the long poll starts: the current end of the partition.
    s = session()
    r = s.post(f"{NODES['b']}/api/v1/sync/pull", headers={"Authorization": f"Bearer {token_b}"}, timeout=30,
               json={"partitions": {partition: None}, "limit": 1000})
    cursor = r.json()["partitions"][partition]["cursor"]
    while r.json()["partitions"][partition]["more"]:
        r = s.post(f"{NODES['b']}/api/v1/sync/pull", headers={"Authorization": f"Bearer {token_b}"}, timeout=30,
                   json={"partitions": {partition: cursor}, "limit": 1000})
        cursor = r.json()["partitions"][partition]["cursor"]
    event_ms, poll_ms, carried = [], [], []
    client = uuid.uuid4().hex
    for i in range(20):
        doc_id = f"fan-{uuid.uuid4().hex}"
        answer = {}

        def long_poll():
            t = session().post(f"{NODES['b']}/api/v1/sync/pull", headers={"Authorization": f"Bearer {token_b}"},
                               timeout=40, json={"partitions": {partition: cursor}, "limit": 1000, "wait": 20})
            answer["at"], answer["r"] = time.monotonic(), t

        poller = threading.Thread(target=long_poll)
        poller.start()
        time.sleep(0.3)  # the poll is waiting on B
        while stream.next(timeout=0) is not None:
            pass  # earlier events (other tests, the previous round)
        r = s.post(f"{NODES['a']}/api/v1/sync/push", headers={"Authorization": f"Bearer {token_a}"}, timeout=30,
                   json={"clientId": client, "changes": [report(doc_id, partition, f"c{i}")]})
        acked = time.monotonic()
        assert r.status_code == 200 and r.json()["results"][0]["status"] == "applied", r.text
        got = stream.next(timeout=10)
        assert got is not None, "no event on node B's stream within 10 s of a push on node A"
        assert got[1].get("event") == "change" and partition in got[1]["data"]
        carried.append(doc_id in got[1]["data"])
        event_ms.append(max(0.0, got[0] - acked) * 1000)
        poller.join(timeout=40)
        assert answer["r"].status_code == 200, answer["r"].text
        part = answer["r"].json()["partitions"][partition]
        assert doc_id in [c["id"] for c in part["changes"]], "the long poll on B did not answer the push on A"
        poll_ms.append(max(0.0, answer["at"] - acked) * 1000)
        cursor = part["cursor"]
    stream.close()
    # The publisher carries a partition's changes only while nchan answers its publishes 201
    # (a stream heard it; EventPublisher.heard). With Redis that answer must count node B's
    # stream: if it did not, every event here would be thin and B's clients would pull.
    assert sum(carried[1:]) >= len(carried) - 3, f"events that carried the push: {carried}"
    figure(f"push on A -> event on B: p50 {percentile(event_ms, 50):.0f} ms, p99 {percentile(event_ms, 99):.0f} ms "
           f"(n={len(event_ms)}; measured from the push's answer)")
    figure(f"push on A -> long poll answered on B: p50 {percentile(poll_ms, 50):.0f} ms, "
           f"p99 {percentile(poll_ms, 99):.0f} ms (n={len(poll_ms)})")


def test_stream_counts_and_presence_count_streams_on_both_nodes():
    """One login (one token) with a stream on A and one on B: both hooks count it, and nginx
    (nchan on Redis, accurate counts) reports two subscribers to the recount, so the count
    of open streams is 2 and the recount keeps it; 0 after both close."""
    email = "wildaid.officer2@demo.tideway"
    token = login(FRONT, email)
    login_id = sql(PRIMARY_DB, """select l.id from app.logins l join app.users u on u.id = l.user_id
                                  where lower(u.email) = %s order by l.created_at desc limit 1""", email)[0][0]
    streams = [Stream(NODES[n], token, ["agency=WildAid"]) for n in ("a", "b")]

    def counted():
        rows = sql(PRIMARY_DB, "select open from app.event_streams where login_id = %s", login_id)
        return rows[0][0] if rows else 0

    deadline = time.monotonic() + 15
    while counted() != 2:
        assert time.monotonic() < deadline, f"open streams {counted()}, expected 2 (one per node)"
        time.sleep(0.2)
    # A count gone wrong (a lost hook): the recount asks nginx, whose count (nchan on Redis)
    # covers both nodes, and sets it back to 2, not to the leader node's own 1.
    sql(PRIMARY_DB, "update app.event_streams set open = 5, updated_at = now() - interval '1 minute' where login_id = %s",
        login_id)
    sql(PRIMARY_DB, "notify tideway_streams_check")
    deadline = time.monotonic() + 20
    while counted() != 2:
        assert time.monotonic() < deadline, f"the recount set {counted()}, expected 2 (one stream per node)"
        time.sleep(0.2)
    for s in streams:
        s.close()
    deadline = time.monotonic() + 15
    while counted() != 0:
        assert time.monotonic() < deadline, f"open streams {counted()} after both closed"
        time.sleep(0.2)


def test_the_replica_stops_clients_see_nothing_and_it_catches_up_from_its_slot():
    """With the replica stopped, pushes and pulls through the front go on without an error
    (pulls fall back to the primary); the slot keeps the WAL, and the restarted replica
    replays what it missed."""
    cluster("replica-stop")
    try:
        token = login(FRONT, "gabon.officer2@demo.tideway")
        s, client, ids = session(), uuid.uuid4().hex, []
        for i in range(10):
            doc_id = f"norep-{uuid.uuid4().hex}"
            r = s.post(f"{FRONT}/api/v1/sync/push", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                       json={"clientId": client, "changes": [report(doc_id, "agency=Gabon", f"c{i}")]})
            assert r.status_code == 200 and r.json()["results"][0]["status"] == "applied", r.text
            p = s.post(f"{FRONT}/api/v1/sync/pull", headers={"Authorization": f"Bearer {token}"}, timeout=30,
                       json={"partitions": {"agency=Gabon": None}, "limit": 10})
            assert p.status_code == 200, p.text
            ids.append(doc_id)
        kept = sql(PRIMARY_DB, """select active, pg_current_wal_lsn() > restart_lsn from pg_replication_slots
                                  where slot_name = 'tideway_replica'""")
        assert kept == [(False, True)], kept
    finally:
        cluster("replica-start")
    deadline = time.monotonic() + 20
    while len(sql(REPLICA_DB, "select 1 from sync.reports where id = any(%s)", ids)) != len(ids):
        assert time.monotonic() < deadline, "the restarted replica did not catch up within 20 s"
        time.sleep(0.1)


def test_node_a_dies_under_load_and_its_clients_finish_on_b():
    """Six devices push and pull, three through node A and three through node B. Node A is
    killed with -9 (nginx, workers, jobs, events) midway. A device whose request fails
    retries the same batch (same changeIds) on the other node. Every acknowledged change
    is on the server once (version 1: no retry applied twice), every device finishes,
    and change events keep flowing to a stream on B (the publisher's lock moves to B)."""
    partition = "agency=WildAid"
    batches, per_batch = 25, 2
    tokens = {n: login(NODES[n], "wildaid.officer1@demo.tideway") for n in NODES}
    acked, errors, failovers, done = [], [], [], []
    lock = threading.Lock()
    started = threading.Event()

    def device(k, home):
        node, client, s = home, f"dev{k}-{uuid.uuid4().hex[:8]}", session()
        cursor = None
        for b in range(batches):
            ids = [f"kill-{client}-{b}-{i}" for i in range(per_batch)]
            body = {"clientId": client, "changes": [report(d, partition, f"b{b}-{i}") for i, d in enumerate(ids)]}
            for attempt in range(20):
                try:
                    r = s.post(f"{NODES[node]}/api/v1/sync/push", json=body, timeout=10,
                               headers={"Authorization": f"Bearer {tokens[node]}"})
                    if r.status_code == 200:
                        break
                    if r.status_code < 500:
                        with lock:
                            errors.append(f"{client}: push {r.status_code} {r.text[:200]}")
                        return
                except requests.RequestException:
                    pass
                # The node is gone (or answered 5xx): the device goes to the other one.
                node = "b" if node == "a" else "a"
                with lock:
                    failovers.append(client)
                time.sleep(0.2)
            else:
                with lock:
                    errors.append(f"{client}: batch {b} never acknowledged")
                return
            statuses = [x["status"] for x in r.json()["results"]]
            if any(st not in ("applied", "duplicate") for st in statuses):
                with lock:
                    errors.append(f"{client}: {statuses}")
                return
            with lock:
                acked.extend(ids)
            if b == 3:
                started.set()
            try:
                p = s.post(f"{NODES[node]}/api/v1/sync/pull", timeout=10, headers={"Authorization": f"Bearer {tokens[node]}"},
                           json={"partitions": {partition: cursor}, "limit": 1000})
                if p.status_code == 200:
                    cursor = p.json()["partitions"][partition]["cursor"]
            except requests.RequestException:
                pass  # the next round's push moves the device
        with lock:
            done.append((client, home, node))

    threads = [threading.Thread(target=device, args=(k, "a" if k % 2 == 0 else "b")) for k in range(6)]
    for t in threads:
        t.start()
    assert started.wait(60)
    killed_at = time.monotonic()
    cluster("kill-node", "a")
    for t in threads:
        t.join(timeout=180)
    elapsed = time.monotonic() - killed_at
    try:
        assert not errors, errors
        assert len(done) == 6, f"only {len(done)} of 6 devices finished"
        assert all(node == "b" for _, home, node in done if home == "a"), done
        assert failovers, "no device noticed node A's death"
        assert len(acked) == len(set(acked)) == 6 * batches * per_batch
        rows = sql(PRIMARY_DB, "select id, version, deleted from sync.reports where id = any(%s)", acked)
        assert len(rows) == len(acked), f"{len(acked) - len(rows)} acknowledged changes missing"
        twice = [r for r in rows if r[1] != 1 or r[2]]
        assert not twice, f"changes applied more than once: {twice[:5]}"
        figure(f"node A killed under load: {len(acked)} changes acknowledged, all on the server once; "
               f"{len(set(failovers))} devices failed over; the rest finished in {elapsed:.1f} s")
        # Events still flow: the publisher's lock is on B now (A's session ended with it).
        assert wait_for_leader(timeout=30) == "b"
        token_b = tokens["b"]
        stream = Stream(NODES["b"], token_b, [partition])
        time.sleep(1.0)
        r = session().post(f"{NODES['b']}/api/v1/sync/push", headers={"Authorization": f"Bearer {token_b}"}, timeout=30,
                           json={"clientId": uuid.uuid4().hex, "changes": [report(f"after-{uuid.uuid4().hex}", partition, "c1")]})
        assert r.status_code == 200
        got = stream.next(timeout=10)
        assert got is not None and got[1].get("event") == "change", "no event after the leader moved to B"
        stream.close()
    finally:
        cluster("node-up", "a")


def test_the_front_spreads_over_both_nodes_again_after_a_restarts():
    s = session()
    seen = set()
    for _ in range(20):
        r = s.get(f"{FRONT}/healthz", timeout=10)
        assert r.status_code == 200
    for n, base in NODES.items():
        if s.get(f"{base}/healthz", timeout=10).status_code == 200:
            seen.add(n)
    assert seen == {"a", "b"}


def test_primary_dies_and_the_replica_is_promoted():
    """The documented promotion (Deploy/README.md, "Cluster"): the primary stops hard, the
    replica is promoted, and the workers, whose conninfo names both servers with
    target_session_attrs=read-write, write to it. Replication is asynchronous: only changes
    the replica had replayed survive, so the test waits for replay before the crash."""
    token = login(FRONT, "gabon.officer1@demo.tideway")
    s = session()
    before = f"promo-{uuid.uuid4().hex}"
    r = s.post(f"{FRONT}/api/v1/sync/push", headers={"Authorization": f"Bearer {token}"}, timeout=30,
               json={"clientId": uuid.uuid4().hex, "changes": [report(before, "agency=Gabon", "c1")]})
    assert r.status_code == 200
    deadline = time.monotonic() + 10
    while not sql(REPLICA_DB, "select 1 from sync.reports where id = %s", before):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cluster("promote")
    t0 = time.monotonic()
    after = f"promo-{uuid.uuid4().hex}"
    client = uuid.uuid4().hex
    while True:
        try:
            r = s.post(f"{FRONT}/api/v1/sync/push", headers={"Authorization": f"Bearer {token}"}, timeout=15,
                       json={"clientId": client, "changes": [report(after, "agency=Gabon", "c1")]})
            if r.status_code == 200:
                break
        except requests.RequestException:
            pass
        assert time.monotonic() - t0 < 60, f"no write accepted within 60 s of the promotion: {r.status_code} {r.text[:200]}"
        time.sleep(0.5)
    figure(f"primary killed, replica promoted: writes accepted again after {time.monotonic() - t0:.1f} s")
    assert sql(REPLICA_DB, "select pg_is_in_recovery()") == [(False,)]
    assert len(sql(REPLICA_DB, "select 1 from sync.reports where id in (%s, %s)", before, after)) == 2
