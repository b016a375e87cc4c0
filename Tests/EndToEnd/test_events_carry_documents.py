"""Events that carry the documents (sync-protocol.md, "Change events"): a change event of a
partition carries its new changes, in the pull's shape and order, with the cursor a client
must hold (`after`) and the one it then holds (`cursor`); too big a change arrives thin."""
import json
import time
import uuid

import psycopg2
import pytest

from conftest import admin_db, login, new_user, worker_db
from synclib import Client, Replica, change, doc_for, new_agency, new_conversation, new_team, user_id
from test_events import Stream, wait_until_subscribed
from test_teams import grant, revoke


def events_until(stream, wanted, timeout=10):
    """The events of `stream` up to the first whose data holds `wanted` (nchan may first
    replay an older event of the channel); None when it never comes."""
    seen = []
    while True:
        event = stream.next(timeout=timeout)
        if event in (None, "timeout"):
            return None, seen
        data = json.loads(event["data"])
        seen.append(data)
        if wanted in event["data"]:
            return data, seen


def replica_in_step(email, partition):
    """A device that has pulled `partition` to its end and published one change there since
    the publisher started, so that the partition's next event carries its changes."""
    replica = Replica(Client(email), [partition])
    replica.sync()
    return replica


def report(replica, partition, body=None):
    rid = uuid.uuid4().hex[:24]
    doc = body or doc_for("reports", rid)
    result = replica.push_one(change("insert", "reports", partition, rid, doc))
    assert result["status"] == "applied", result
    return rid


def test_a_subscriber_gets_the_pushed_document_with_the_pull_s_cursors():
    agency = new_agency()
    partition = f"agency={agency}"
    writer = replica_in_step(new_user(agency=agency), partition)
    reader = replica_in_step(new_user(agency=agency), partition)
    stream = Stream(reader.client.token, [partition])
    assert stream.status == 200
    wait_until_subscribed(stream)
    report(writer, partition)  # the partition's first event since the start may be thin
    events_until(stream, partition)
    reader.sync()
    rid = report(writer, partition)
    event, _ = events_until(stream, rid)
    assert event is not None, "no event carried the document"
    assert event["partition"] == partition
    assert event["after"] == reader.cursors[partition]
    # Exactly the changes a pull from `after` returns, in its shape and order, and its cursor.
    pulled = reader.client.pull({partition: event["after"]})[partition]
    assert pulled["changes"] == event["changes"] and pulled["cursor"] == event["cursor"] and not pulled["more"]
    assert [(c["collection"], c["id"], c["op"]) for c in event["changes"]] == [("reports", rid, "upsert")]
    # Applying it is the same as pulling: from `cursor` nothing is new.
    reader._apply(partition, event)
    assert reader.doc(partition, "reports", rid)["_id"] == rid
    after = reader.client.pull({partition: event["cursor"]})[partition]
    assert after["status"] == "ok" and after["changes"] == [] and after["cursor"] == event["cursor"]
    stream.close()


def test_the_event_read_runs_only_in_one_repeatable_read_read_only_snapshot():
    """The publisher sends no BEGIN: its read's two statements are one pipeline's implicit
    transaction, a repeatable read by its connection's defaults (EventChanges.session).
    app.start_event_read refuses any other transaction, where the changes could be read in
    a later snapshot than the clock and the revocations (the publisher then goes thin)."""
    partition = f"agency={new_agency()}"
    conn = worker_db()
    conn.autocommit = True  # the BEGINs below are the transactions
    try:
        cur = conn.cursor()
        for begin in ("begin", "begin isolation level repeatable read", "begin read only"):
            cur.execute(begin)
            with pytest.raises(psycopg2.Error) as refused:
                cur.execute("select * from app.start_event_read(%s, 0)", (partition,))
            assert refused.value.pgcode == "25000", begin
            cur.execute("rollback")
        cur.execute("begin isolation level repeatable read read only")
        cur.execute("select readable from app.start_event_read(%s, 0)", (partition,))
        assert cur.fetchone() == (True,)
        cur.execute("rollback")
        # As the publisher's connection is set up: no BEGIN, the session's defaults.
        cur.execute("set default_transaction_isolation = 'repeatable read'")
        cur.execute("set default_transaction_read_only = on")
        cur.execute("select readable from app.start_event_read(%s, 0)", (partition,))
        assert cur.fetchone() == (True,)
    finally:
        conn.close()


def event_read_claims(partition):
    """Whether app.start_event_read finds `partition` readable, and the claims it set
    (user, role, agency, login), in one read's transaction as the publisher runs it."""
    conn = worker_db()
    conn.autocommit = True
    try:
        cur = conn.cursor()
        cur.execute("begin isolation level repeatable read read only")
        cur.execute("select readable from app.start_event_read(%s, 0)", (partition,))
        readable = cur.fetchone()[0]
        cur.execute("select current_setting('tideway.user_id'), current_setting('tideway.role'),"
                    " current_setting('tideway.agency'), current_setting('tideway.login_id')")
        claims = cur.fetchone()
        cur.execute("rollback")
        return readable, claims
    finally:
        conn.close()


def test_the_event_read_claims_a_reader_of_each_kind_chosen_again_at_every_read():
    """The claims are those of a real reader of the partition (app.claim_reader_of), and a
    conversation's reader is chosen in each read's snapshot: a member who left between two
    events no longer reads for the next one, and with no member left the event is thin."""
    nobody = "00000000-0000-0000-0000-000000000000"
    agency = new_agency()
    assert event_read_claims(f"agency={agency}") == (True, ("", "events", agency, ""))
    assert event_read_claims(f"agency=NoSuch{uuid.uuid4().hex[:8]}")[0] is False
    me = user_id(new_user(agency=agency))
    assert event_read_claims(f"user={me}") == (True, (me, "events", "", ""))
    assert event_read_claims("all-users=all-the-users") == (True, (nobody, "events", "", ""))
    team = new_team("admin@demo.tideway", "Gabon", "Claims")
    assert event_read_claims(team) == (True, (nobody, "agencyAdmin", "Gabon", ""))
    first, second = sorted([me, user_id(new_user(agency=agency))])
    cid = new_conversation([first, second])
    partition = f"conversation={cid}"
    assert event_read_claims(partition) == (True, (first, "events", "", ""))
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.conversation_members set active = false where conversation_id = %s and user_id = %s",
                    (cid, first))
    assert event_read_claims(partition) == (True, (second, "events", "", ""))
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.conversation_members set active = false where conversation_id = %s", (cid,))
    assert event_read_claims(partition) == (False, ("", "events", "", ""))


def writer_listening_to_a_new_agency():
    """A new agency's partition, a replica of it that writes, and that writer's own stream of
    it, past the partition's first event (which may be thin: see the test above)."""
    agency = new_agency()
    partition = f"agency={agency}"
    writer = replica_in_step(new_user(agency=agency), partition)
    stream = Stream(writer.client.token, [partition])
    wait_until_subscribed(stream)
    report(writer, partition)
    events_until(stream, partition)
    return partition, writer, stream


def big_push_arrives_thin_and_the_next_carries(writer, partition, stream):
    """Pushes more reports in one commit than an event carries (50; more than 16 KB also goes
    thin): their event is thin, and the next small change's event carries it again, from where
    the thin event left clients. Returns that event."""
    ids = [uuid.uuid4().hex[:24] for _ in range(60)]
    results = writer.push(*[change("insert", "reports", partition, rid, doc_for("reports", rid)) for rid in ids])
    assert {r["status"] for r in results} == {"applied"}
    event, _ = events_until(stream, partition)
    assert event == {"partition": partition}, event
    small = report(writer, partition)
    event, _ = events_until(stream, small)
    assert event is not None and [c["id"] for c in event["changes"]] == [small]
    return event


def test_a_big_change_arrives_thin():
    partition, writer, stream = writer_listening_to_a_new_agency()
    big_push_arrives_thin_and_the_next_carries(writer, partition, stream)
    stream.close()


def test_after_an_event_no_stream_received_the_next_is_thin_and_a_new_stream_s_second_carries():
    """An event that reached no open stream (nchan answered 202) makes the partition's next
    event thin, the publisher reading its clock alone (sync-protocol.md, "Change events"): so
    the first event a stream gets after opening on such a partition is thin, and the next
    carries from the cursor its client then holds."""
    agency = new_agency()
    partition = f"agency={agency}"
    writer = replica_in_step(new_user(agency=agency), partition)
    reader = replica_in_step(new_user(agency=agency), partition)
    report(writer, partition)
    report(writer, partition)  # no stream listens: both events reach no one
    stream = Stream(reader.client.token, [partition])
    wait_until_subscribed(stream)
    report(writer, partition)
    event, _ = events_until(stream, partition)
    assert event == {"partition": partition}, event
    reader.sync()
    rid = report(writer, partition)
    event, _ = events_until(stream, rid)
    assert event is not None, "the event after the thin one did not carry the document"
    assert event["after"] == reader.cursors[partition] and [c["id"] for c in event["changes"]] == [rid]
    stream.close()


def test_a_resume_gets_what_no_stream_heard_thin():
    """Events published while no stream listens: the first was decided while one did
    (carried), every later one is thin; a reconnect with Last-Event-ID gets them so, and
    pulling from where the carried one leaves it is the same as pulling from its old cursor."""
    partition, writer, stream = writer_listening_to_a_new_agency()
    writer.sync()
    heard = report(writer, partition)
    event, _ = events_until(stream, heard)
    assert event is not None and [c["id"] for c in event["changes"]] == [heard]
    last_id = stream.last_id
    stream.close()
    time.sleep(0.5)  # nginx has let the stream go
    first, second = report(writer, partition), report(writer, partition)
    again = Stream(writer.client.token, [partition], last_event_id=last_id)
    assert again.status == 200
    carried, _ = events_until(again, first)
    assert carried is not None and [c["id"] for c in carried["changes"]] == [first], carried
    thin = again.next(timeout=10)
    assert thin not in (None, "timeout") and json.loads(thin["data"]) == {"partition": partition}, thin
    pulled = writer.client.pull({partition: carried["cursor"]})[partition]
    assert [c["id"] for c in pulled["changes"]] == [second]
    again.close()


def test_a_retried_push_publishes_no_second_copy():
    partition, writer, stream = writer_listening_to_a_new_agency()
    rid = uuid.uuid4().hex[:24]
    once = change("insert", "reports", partition, rid, doc_for("reports", rid))
    assert writer.push_one(once)["status"] == "applied"
    event, _ = events_until(stream, rid)
    assert event is not None and "changes" in event
    # The same change again (a retry after a lost answer): answered, written once, and no
    # event carries it a second time.
    again = writer.push_one(once)
    assert again["status"] == "duplicate", again
    later = report(writer, partition)
    event, seen = events_until(stream, later)
    assert event is not None
    assert all(c["id"] != rid for e in seen for c in e.get("changes", [])), seen
    stream.close()


def test_applying_an_event_twice_or_late_is_refused_by_its_after_cursor():
    # A client applies an event only while its cursor equals `after`; after applying it
    # holds `cursor`, which differs, so a second copy (nchan's replay, a reconnect) is not
    # applied again.
    partition, writer, stream = writer_listening_to_a_new_agency()
    rid = report(writer, partition)
    event, _ = events_until(stream, rid)
    assert event is not None and event["after"] != event["cursor"]


def test_a_subscriber_to_a_partition_it_may_not_read_is_refused_and_sees_no_document():
    agency, other = new_agency(), new_agency()
    partition = f"agency={agency}"
    writer = replica_in_step(new_user(agency=agency), partition)
    outsider = login(new_user(agency=other))["accessToken"]
    assert Stream(outsider, [partition]).status == 403
    theirs = Stream(outsider, [f"agency={other}"])
    wait_until_subscribed(theirs)
    rid = report(writer, partition)
    report(writer, partition)
    assert theirs.next(timeout=2) == "timeout"
    theirs.close()
    assert rid


def test_a_conversation_s_members_get_its_messages():
    me, you = new_user(agency="Gabon"), new_user(agency="Gabon")
    cid = new_conversation([user_id(me), user_id(you)])
    partition = f"conversation={cid}"
    writer = replica_in_step(me, partition)
    reader = replica_in_step(you, partition)
    stream = Stream(reader.client.token, [partition])
    wait_until_subscribed(stream)
    first = uuid.uuid4().hex
    assert writer.push_one(change("insert", "chatMessages", partition, first, doc_for("chatMessages", first)))["status"] == "applied"
    events_until(stream, partition)
    reader.sync()
    mid = uuid.uuid4().hex
    assert writer.push_one(change("insert", "chatMessages", partition, mid, doc_for("chatMessages", mid)))["status"] == "applied"
    event, _ = events_until(stream, mid)
    assert event is not None and event["after"] == reader.cursors[partition]
    assert event["changes"][0]["doc"]["authorId"] == writer.client.id
    stream.close()


def team_member_listening(name):
    """A new team of Gabon's, an admin's replica that writes to it, and a member of another
    agency granted read on it, with that member's open stream of the team."""
    admin = Client("admin@demo.tideway")
    team = new_team("admin@demo.tideway", "Gabon", name)
    member = Client(new_user(agency="WildAid"))
    assert grant(admin, team, "user", member.id, "read").status_code == 200
    writer = Replica(admin, [team])
    writer.sync()
    stream = Stream(member.token, [team])
    assert stream.status == 200
    wait_until_subscribed(stream)
    return team, writer, member, stream


def test_losing_a_team_closes_the_stream_before_any_later_document_is_carried():
    team, writer, member, stream = team_member_listening("Carried")
    tid = uuid.uuid4().hex
    assert writer.push_one(change("insert", "tasks", team, tid, doc_for("tasks", tid)))["status"] == "applied"
    events_until(stream, team)
    with admin_db() as db, db.cursor() as cur:
        # The revocation's NOTIFY lost (as if no publisher listened): the recorded
        # revocation alone must close the stream before the next change is carried.
        cur.execute("alter table app.grants disable trigger grants_after_revoke")
        try:
            cur.execute("delete from app.grants where partition = %s and grantee = %s", (team, member.id))
            cur.execute("insert into app.stream_revocations (channels) select app.login_channels(%s::uuid)", (member.id,))
        finally:
            cur.execute("alter table app.grants enable trigger grants_after_revoke")
    secret = uuid.uuid4().hex
    assert writer.push_one(change("insert", "tasks", team, secret, doc_for("tasks", secret)))["status"] == "applied"
    while True:
        event = stream.next(timeout=10)
        assert event != "timeout", "the stream stayed open"
        if event is None:
            break  # closed
        assert secret not in event["data"], event
    assert Stream(member.token, [team]).status == 403


def test_a_stream_opened_just_after_its_login_s_revocation_is_closed_at_the_next_checkpoints():
    # The window sync-protocol.md names: a worker authorizes a subscription just before a
    # revocation, and nginx opens the stream just after the revocation closed that login's
    # streams. Stood in for here by a revocation recorded (and handled) while the login's
    # first stream is open, then a second stream opened after it: the publisher closes the
    # streams of recent revocations again at its next checkpoints, so the second one ends
    # too, without any further revocation.
    team, writer, member, first = team_member_listening("Reclosed")
    with admin_db() as db, db.cursor() as cur:
        cur.execute("insert into app.stream_revocations (channels) select app.login_channels(%s::uuid)", (member.id,))
    tid = uuid.uuid4().hex  # a change, so that the publisher reads the revocation now
    assert writer.push_one(change("insert", "tasks", team, tid, doc_for("tasks", tid)))["status"] == "applied"
    while (event := first.next(timeout=15)) is not None:
        assert event != "timeout", "the first stream stayed open"
    second = Stream(member.token, [team])
    assert second.status == 200
    wait_until_subscribed(second)
    # Two checkpoints (5 s apart) and some slack: a bound on the mechanism, not a speed test.
    while (event := second.next(timeout=20)) is not None:
        assert event != "timeout", "a stream opened after its login's revocation stayed open"
