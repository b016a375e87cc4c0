"""No missed changes: concurrent writers against a puller looping on its cursor, and
transactions that commit in another order than they started, shown directly in SQL."""
import json
import random
import threading
import time
import uuid

import psycopg2.extensions
import pytest

from conftest import admin_db, claim, new_user, worker_db
from synclib import Client, Replica, change, doc_for, new_agency, server_state, user_id


def writer(client, partitions, rounds, seed, errors):
    """Inserts, updates and deletes its own documents in `partitions`, in small batches."""
    rng = random.Random(seed)
    live = {p: [] for p in partitions}
    try:
        for _ in range(rounds):
            batch = []
            for _ in range(rng.randint(1, 4)):
                p = rng.choice(partitions)
                roll = rng.random()
                if live[p] and roll < 0.3:
                    doc_id = rng.choice(live[p])
                    batch.append(change("update", "reports", p, doc_id, {"draft": rng.random() < 0.5,
                                                                         "date": "2024-06-01T00:00:00Z"}))
                elif live[p] and roll < 0.45:
                    doc_id = live[p].pop(rng.randrange(len(live[p])))
                    batch.append(change("delete", "reports", p, doc_id))
                else:
                    doc_id = f"cc-{uuid.uuid4().hex}"
                    live[p].append(doc_id)
                    collection = rng.choice(["reports", "reports", "dutyChanges"])
                    if collection == "dutyChanges":
                        live[p].remove(doc_id)
                    batch.append(change("insert", collection, p, doc_id, doc_for(collection, doc_id)))
            # One id may appear twice in a batch (insert then update): that is fine.
            results = client.push(batch)
            bad = [r for r in results if r["status"] != "applied"]
            if bad:
                errors.append(bad)
    except Exception as e:  # surfaced by the test
        errors.append(repr(e))


def write_while_pulling(replica, writers, errors):
    """Runs the writer threads to their end while `replica` pulls page after page, then
    pulls what is left; fails when a writer had a change refused or an error."""
    for t in writers:
        t.start()
    while any(t.is_alive() for t in writers):
        replica.pull_once()
    for t in writers:
        t.join()
    assert not errors, errors
    replica.sync()


@pytest.mark.parametrize("round_number", range(4))
def test_concurrent_writers_and_looping_puller_end_with_the_servers_state(round_number):
    a, b = new_agency(), new_agency()
    pa, pb = f"agency={a}", f"agency={b}"
    # Writers: three in agency A (one partition), two in B; the two-agency case comes from
    # several writers per partition and a puller of both.
    writers = [Client(new_user(agency=a)) for _ in range(3)] + [Client(new_user(agency=b)) for _ in range(2)]
    reader = Client("admin@demo.tideway")
    replica = Replica(reader, [pa, pb], limit=3)
    replica.sync()
    errors = []
    threads = [threading.Thread(target=writer, args=(w, [pa if i < 3 else pb], 12, round_number * 10 + i, errors))
               for i, w in enumerate(writers)]
    write_while_pulling(replica, threads, errors)
    assert replica.pages > 3, "the puller should have paged through several small pages"
    for p in (pa, pb):
        server = server_state(p)
        assert len(server) > 0
        assert replica.docs[p] == server, p


def test_writers_of_several_partitions_each_and_a_puller_of_all():
    keys = [new_agency() for _ in range(3)]
    partitions = [f"agency={k}" for k in keys]
    # A writer may write every partition of its own agency only; several agencies' writers
    # write at once, and the global admin pulls all three.
    writers = [Client(new_user(agency=k)) for k in keys for _ in range(2)]
    replica = Replica(Client("admin@demo.tideway"), partitions, limit=4)
    errors = []
    threads = [threading.Thread(target=writer, args=(w, [partitions[i // 2]], 10, 100 + i, errors))
               for i, w in enumerate(writers)]
    write_while_pulling(replica, threads, errors)
    for p in partitions:
        assert replica.docs[p] == server_state(p), p


# Direct SQL: two worker transactions with claims set as app.authenticate would.

def as_member(conn, uid, agency):
    conn.set_isolation_level(psycopg2.extensions.ISOLATION_LEVEL_READ_COMMITTED)
    cur = conn.cursor()
    claim(cur, uid, "officer", agency)
    return cur


def insert(cur, partition, doc_id):
    cur.execute("select app.apply_change('reports', %s, %s, 'insert', %s, null, %s)",
                (partition, doc_id, json.dumps({"_id": doc_id, "timestamp": "2024-05-01T10:00:00Z"}), doc_id))
    assert cur.fetchone()[0]["status"] == "applied"


def backend_waits_on_lock(pid):
    with admin_db() as conn, conn.cursor() as cur:
        for _ in range(500):
            cur.execute("select wait_event_type from pg_stat_activity where pid = %s", (pid,))
            if cur.fetchone()[0] == "Lock":
                return True
            time.sleep(0.01)
    return False


def ids(entry):
    return [c["id"] for c in entry["changes"]]


def test_a_transaction_that_starts_first_and_commits_last_is_never_missed():
    key = new_agency()
    p = f"agency={key}"
    email = new_user(agency=key)
    uid = user_id(email)
    reader = Client(email)
    cursor = reader.pull({p: None})[p]["cursor"]

    a, b = worker_db(), worker_db()
    try:
        cur_a = as_member(a, uid, key)
        insert(cur_a, p, "A")  # A writes first and holds the partition's clock
        cur_b = as_member(b, uid, key)
        done = threading.Event()

        def run_b():
            insert(cur_b, p, "B")  # B starts later: it queues behind A's clock
            done.set()
        t = threading.Thread(target=run_b)
        t.start()
        assert backend_waits_on_lock(b.get_backend_pid()), "B should wait for A's partition clock"
        assert not done.is_set()
        # Neither is visible yet, and the cursor must not move past A's number.
        entry = reader.pull({p: cursor})[p]
        assert ids(entry) == []
        cursor = entry["cursor"]
        a.commit()
        t.join(10)
        assert done.is_set()
        # A is visible now; B is not committed yet.
        entry = reader.pull({p: cursor})[p]
        assert ids(entry) == ["A"]
        cursor = entry["cursor"]
        b.commit()
        entry = reader.pull({p: cursor})[p]
        assert ids(entry) == ["B"]
    finally:
        a.close()
        b.close()


def test_out_of_order_commits_in_two_partitions_leave_each_feed_complete():
    k1, k2 = new_agency(), new_agency()
    p1, p2 = f"agency={k1}", f"agency={k2}"
    e1, e2 = new_user(agency=k1), new_user(agency=k2)
    reader = Client("admin@demo.tideway")
    cursors = {p: e["cursor"] for p, e in reader.pull({p1: None, p2: None}).items()}

    a, b = worker_db(), worker_db()
    try:
        cur_a = as_member(a, user_id(e1), k1)
        insert(cur_a, p1, "A1")  # starts first
        cur_b = as_member(b, user_id(e2), k2)
        insert(cur_b, p2, "B2")  # another partition: does not wait
        b.commit()  # commits first
        answer = reader.pull(cursors)
        assert ids(answer[p1]) == [] and ids(answer[p2]) == ["B2"]
        cursors = {p: e["cursor"] for p, e in answer.items()}
        insert(cur_a, p1, "A1b")
        a.commit()  # commits last
        answer = reader.pull(cursors)
        assert ids(answer[p1]) == ["A1", "A1b"] and ids(answer[p2]) == []
    finally:
        a.close()
        b.close()
