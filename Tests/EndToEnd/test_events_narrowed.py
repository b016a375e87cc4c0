"""The publisher's read narrowed to the changed collection (docs/performance/round-09.md, "The
publisher's read narrowed to the changed collection"): a commit's notification names the
partition and the collection (`partition/collection`), and the event of a change of one
collection reads that collection's changes only. It may carry them only when they are all
the partition's changes since its last event: never an event whose cursor vouches for a
change of another collection that it did not carry."""
import json
import select
import threading
import uuid

import psycopg2

from conftest import admin_db, new_user
from synclib import Client, Replica, change, doc_for, new_agency, server_state
from test_events import Stream, wait_until_subscribed
from test_events_carry_documents import (big_push_arrives_thin_and_the_next_carries, events_until, report,
                                         writer_listening_to_a_new_agency)


def notifications(conn, timeout=5, of=()):
    """The payloads of `tideway_changes` that `conn` (listening) received within `timeout`,
    those naming one of the partitions `of` (others commit meanwhile: presence, new users)."""
    payloads = []
    while select.select([conn], [], [], timeout) != ([], [], []):
        conn.poll()
        payloads += [n.payload for n in conn.notifies
                     if n.channel == "tideway_changes" and n.payload.rsplit("/", 1)[0] in of]
        conn.notifies.clear()
        timeout = 0.3
    return payloads


def clock_of(partition):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select seq from app.partition_clocks where partition = %s", (partition,))
        return cur.fetchone()[0]


def test_a_commit_s_notification_names_its_partition_and_collection():
    partition, writer, stream = writer_listening_to_a_new_agency()
    stream.close()
    listener = admin_db()
    listener.set_isolation_level(psycopg2.extensions.ISOLATION_LEVEL_AUTOCOMMIT)
    listener.cursor().execute("listen tideway_changes")
    try:
        # app.insert_documents: app.ticks, which also names the clock it left.
        report(writer, partition)
        assert notifications(listener, of=[partition]) == [f"{partition}/reports@{clock_of(partition)}"]
        duty = uuid.uuid4().hex[:24]
        writer.push_one(change("insert", "dutyChanges", partition, duty, doc_for("dutyChanges", duty)))
        rid = report(writer, partition)
        clock = clock_of(partition)
        assert notifications(listener, of=[partition]) == [f"{partition}/dutyChanges@{clock - 1}", f"{partition}/reports@{clock}"]
        # app.apply_change (an update): app.tick with the collection, and no clock (one
        # notification for all of a transaction's rows).
        assert writer.push_one(change("update", "reports", partition, rid, {"draft": False}))["status"] == "applied"
        assert notifications(listener, of=[partition]) == [f"{partition}/reports"]
        # A writer that names no collection (the compactor, the job runner's deletions): the partition alone.
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select app.tick(%s)", (partition,))
        assert notifications(listener, of=[partition]) == [partition]
    finally:
        listener.close()


def test_one_statement_s_changes_of_several_partitions_notify_each_partition_s_clock():
    first, second = f"agency={new_agency()}", f"agency={new_agency()}"
    listener = admin_db()
    listener.cursor().execute("listen tideway_changes")
    try:
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select app.ticks(array[%s, %s, %s], 'reports'), app.ticks(array[%s, %s])",
                        (second, first, second, first, first))
            numbers, unnamed = cur.fetchone()
        assert numbers == [1, 1, 2] and unnamed == [2, 3]
        assert sorted(notifications(listener, of=[first, second])) == sorted([f"{first}/reports@1", f"{second}/reports@2", f"{first}/@3"])
    finally:
        listener.close()


def silent_change(partition, table, collection):
    """A change of `collection` numbered by the partition's clock whose notification has not
    arrived when the publisher reads: as a commit made after the notifications the publisher
    acts on were read, before its read's snapshot (its own notification still on the way).
    Its number is taken without app.tick, so it is never notified at all."""
    did = uuid.uuid4().hex[:24]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(f"""with c as (update app.partition_clocks set seq = seq + 1 where partition = %s returning seq)
                        insert into sync.{table} (id, partition, doc, seq) select %s, %s, %s::jsonb, c.seq from c""",
                    (partition, did, partition, json.dumps(doc_for(collection, did))))
    return did


def assert_is_the_pull(client, partition, event):
    pulled = client.pull({partition: event["after"]})[partition]
    assert (pulled["changes"], pulled["cursor"], pulled["more"]) == (event["changes"], event["cursor"], False), \
        (event, pulled)


def test_a_change_of_another_collection_not_yet_notified_is_carried_with_the_notified_one():
    partition, writer, stream = writer_listening_to_a_new_agency()
    try:
        for table, collection in (("mpas", "mpas"), ("duty_changes", "dutyChanges")):
            other = silent_change(partition, table, collection)
            rid = report(writer, partition)
            event, _ = events_until(stream, rid)
            assert event is not None, "no event carried the report"
            # Its cursor vouches for both: it must carry both, exactly as a pull from `after`.
            assert [(c["collection"], c["id"]) for c in event["changes"]] == [(collection, other), ("reports", rid)]
            assert_is_the_pull(writer.client, partition, event)
        # A document changed twice in one commit leaves its first number to none of the
        # collection's rows: the read widens to the whole partition, and still carries.
        rid = report(writer, partition)
        events_until(stream, rid)
        with admin_db() as conn, conn.cursor() as cur:
            for _ in range(2):
                cur.execute("update sync.reports set seq = app.tick(partition, 'reports'), version = version + 1 "
                            "where id = %s", (rid,))
        event, _ = events_until(stream, rid)
        assert event is not None and [c["id"] for c in event["changes"]] == [rid]
        assert_is_the_pull(writer.client, partition, event)
    finally:
        stream.close()


def test_too_many_changes_of_the_notified_collection_arrive_thin_and_the_next_carries():
    partition, writer, stream = writer_listening_to_a_new_agency()
    try:
        other = silent_change(partition, "mpas", "mpas")
        event = big_push_arrives_thin_and_the_next_carries(writer, partition, stream)
        assert_is_the_pull(writer.client, partition, event)
        assert ("mpas", other) in server_state(partition)
    finally:
        stream.close()


def test_concurrent_commits_to_several_collections_of_one_partition_lose_nothing():
    """Writers of three collections of one partition commit at once (two through the API,
    whose notifications name the collection; one as the job runner writes, naming none).
    A device that applies every event whose `after` is its cursor and pulls otherwise ends
    with exactly the partition's documents: no event vouched for a change it did not carry.
    (Commits of one partition cannot come out of number order: the clock row stays locked to
    its transaction's end, 0004. What can is a notification arriving after a snapshot that
    already holds its change, as here and in the test above.)"""
    partition, writer, stream = writer_listening_to_a_new_agency()
    reader = Replica(Client(new_user(agency=partition.split("=", 1)[1])), [partition])
    reader.sync()
    errors = []

    def api_writer(collection):
        replica = Replica(writer.client, [partition])
        try:
            for _ in range(15):
                did = uuid.uuid4().hex[:24]
                status = replica.push_one(change("insert", collection, partition, did, doc_for(collection, did)))["status"]
                assert status == "applied", status
        except Exception as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    def unnamed_writer():
        try:
            with admin_db() as conn:
                conn.autocommit = True
                cur = conn.cursor()
                for _ in range(15):
                    did = uuid.uuid4().hex[:24]
                    cur.execute("insert into sync.mpas (id, partition, doc, seq) values (%s, %s, %s::jsonb, app.tick(%s))",
                                (did, partition, json.dumps(doc_for("mpas", did)), partition))
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=api_writer, args=(c,)) for c in ("reports", "dutyChanges")]
    threads.append(threading.Thread(target=unnamed_writer))
    for t in threads:
        t.start()
    carried = 0
    try:
        # Every event until the writers are done and the stream has been quiet for 3 s.
        while True:
            writing = any(t.is_alive() for t in threads)
            event = stream.next(timeout=3)
            if event in (None, "timeout"):
                if writing:
                    continue
                break
            data = json.loads(event["data"])
            if "changes" in data and data["after"] == reader.cursors[partition]:
                reader._apply(partition, data)
                carried += 1
            else:
                reader.sync()  # a thin event, or one for another cursor: a device pulls
    finally:
        stream.close()
        for t in threads:
            t.join()
    assert not errors, errors
    assert carried > 0, "no event carried its changes"
    # A change an event vouched for without carrying it would be missing for good: pulls
    # start from the cursor the event gave.
    reader.sync()
    assert reader.docs[partition] == server_state(partition)
    assert len(reader.docs[partition]) >= 45
