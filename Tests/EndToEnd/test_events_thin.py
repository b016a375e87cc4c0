"""A thin event without a read (docs/performance/round-16.md, "A thin event without a
read"): a statement's changes (app.ticks, every push of new documents) notify the clock they
left, so the event of a partition no stream heard takes it from the notification and the
publisher reads nothing; the revocations committed before the write are closed before its
event because their notifications arrive first (commit order), also when their ids are out
of commit order."""
import select
import time
import uuid

import psycopg2

from conftest import admin_db, new_user
from synclib import Client, new_agency
from test_events import Stream, wait_until_subscribed
from test_events_carry_documents import events_until, replica_in_step, report


def clock_reads(cur):
    """How many times any connection called app.event_clock (the publisher's read of a clock)."""
    cur.execute("create extension if not exists pg_stat_statements")
    cur.execute("select coalesce(sum(calls), 0) from pg_stat_statements where query like '%app.event_clock(%'")
    return cur.fetchone()[0]


def unclocked(listener):
    """The `tideway_changes` notifications without a clock that `listener` got (each may
    cost the publisher a read of the clock)."""
    listener.poll()
    named = [n.payload for n in listener.notifies if n.channel == "tideway_changes" and "@" not in n.payload.rsplit("/", 1)[-1]]
    listener.notifies.clear()
    return named


def test_an_unheard_partition_s_thin_event_reads_no_clock():
    agency = new_agency()
    partition = f"agency={agency}"
    writer = replica_in_step(new_user(agency=agency), partition)
    reader = Client(new_user(agency=agency))
    listener = admin_db()
    listener.set_isolation_level(psycopg2.extensions.ISOLATION_LEVEL_AUTOCOMMIT)
    listener.cursor().execute("listen tideway_changes")
    try:
        # Whatever else commits meanwhile without a clock (a new user's presence: app.tick)
        # is still read: each such notification may add one read, and nothing else may.
        time.sleep(0.5)
        others = unclocked(listener)
        with admin_db() as db, db.cursor() as cur:
            before = clock_reads(cur)
        report(writer, partition)
        report(writer, partition)  # no stream listens: both events reach no one
        stream = Stream(reader.token, [partition])
        wait_until_subscribed(stream)
        report(writer, partition)
        event, _ = events_until(stream, partition)
        assert event == {"partition": partition}, event
        stream.close()
        others += unclocked(listener)
        with admin_db() as db, db.cursor() as cur:
            after = clock_reads(cur)
        assert not any(n.startswith(partition) for n in others), others
        assert after - before <= len(others), (before, after, others)
    finally:
        listener.close()


def test_a_revocation_committed_after_a_later_numbered_one_closes_its_streams_before_the_next_event():
    # Revocation ids are taken at insert, before commit: one numbered lower may commit after
    # one numbered higher was handled. Its notification still comes before any change
    # committed after it, and closes its login's streams there, before that change's event
    # (here the first event of a partition no stream heard: thin, with no read).
    agency = new_agency()
    partition = f"agency={agency}"
    writer = replica_in_step(new_user(agency=agency), partition)
    member = Client(new_user(agency=agency))
    other = Client(new_user(agency=agency))
    stream = Stream(member.token, [partition])
    assert stream.status == 200
    wait_until_subscribed(stream)
    lower = admin_db()
    lower.autocommit = False  # its revocation commits after the other's
    try:
        with lower.cursor() as cur:
            cur.execute("select app.notify_revoked(app.login_channels(%s::uuid))", (member.id,))
        with admin_db() as db, db.cursor() as cur:
            cur.execute("select app.notify_revoked(app.login_channels(%s::uuid))", (other.id,))
        lower.commit()
    finally:
        lower.close()
    secret = report(writer, partition)
    while True:
        event = stream.next(timeout=10)
        assert event != "timeout", "the stream stayed open"
        if event is None:
            break  # closed
        assert partition not in event["data"] and secret not in event["data"], event
