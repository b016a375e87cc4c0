"""Change events while `tideway events` restarts (issue 20, defects 2 and 3): a commit made
while the publisher is down still produces its event, a reconnecting stream resumes with
Last-Event-ID without a gap, and a sign-out made while it is down still closes the login's
streams within the stated bound."""
import contextlib
import os
import signal
import socket
import threading
import time
import uuid

from conftest import STATE, admin_db, api, login, new_user
from synclib import Client, Replica, new_agency, user_id

from test_events import Stream, wait_until_subscribed

# docs/sync-protocol.md, "Change events": a revoked login's streams end within this bound,
# even when the publisher missed the revocation's notification (it checks every 5 s and
# on start: EventPublisher.checkpointSeconds).
REVOKED_STREAM_BOUND = 15
KILLS = 20  # kill -9 of the publisher, each with a change committed 20 ms later
# How long a committed change may take to reach a subscriber when the publisher restarts.
EVENT_BOUND = 10


def reporter(email, agency):
    """Pushes a new report as `email` when called, signed in beforehand: the push must land
    inside the publisher's restart, not after a sign-in."""
    client = Replica(Client(token=login(email)["accessToken"]))

    def push():
        rid = uuid.uuid4().hex[:24]
        result = client.push_one({"collection": "reports", "partition": f"agency={agency}", "id": rid, "op": "insert",
                                  "doc": {"timestamp": "2026-11-21T10:00:00Z"}})
        assert result["status"] == "applied", result
    return push


def hang_up(stream):
    """Ends a stream at once: Response.close() waits for the reader thread, which sits in a
    read until the next keep-alive (up to 25 s)."""
    try:
        stream.response.raw._fp.fp.raw._sock.shutdown(socket.SHUT_RDWR)
    except Exception:
        pass
    stream.close()


def publisher_pid():
    with open(os.path.join(STATE, "run", "events.pid")) as f:
        text = f.read().strip()
    return int(text) if text.isdigit() else None


def kill_publisher(while_down=None):
    """kill -9 of `tideway events`; its supervisor starts a new one 0.2 s later. With
    `while_down`, the supervisor is held (SIGSTOP) until that has run, so it surely runs
    while no publisher listens, however slow the machine."""
    with open(os.path.join(STATE, "run", "supervise-events.pid")) as f:
        supervisor = int(f.read().strip())
    pid = publisher_pid()
    assert pid
    if while_down:
        os.kill(supervisor, signal.SIGSTOP)
    try:
        os.kill(pid, signal.SIGKILL)
        if while_down:
            deadline = time.monotonic() + 5
            while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
                assert time.monotonic() < deadline, "the publisher outlived kill -9"
                time.sleep(0.01)
            time.sleep(0.02)
            while_down()
    finally:
        if while_down:
            os.kill(supervisor, signal.SIGCONT)
    return pid


def wait_for_new_publisher(old, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = publisher_pid()
        if pid and pid != old:
            return pid
        time.sleep(0.05)
    raise AssertionError("the publisher was not restarted")


def test_a_change_committed_while_the_publisher_is_down_still_produces_its_event():
    key = new_agency()
    reader, writer = new_user(agency=key), new_user(agency=key)
    push_report = reporter(writer, key)
    stream = Stream(login(reader)["accessToken"], [f"agency={key}"])
    assert stream.status == 200
    wait_until_subscribed(stream)
    try:
        for _ in range(KILLS):
            old = kill_publisher(while_down=push_report)
            wait_for_new_publisher(old)
            event = stream.next(timeout=10)
            assert event not in (None, "timeout"), "no event for a change committed while the publisher restarted"
            assert f'"agency={key}"' in event["data"]
    finally:
        hang_up(stream)


def test_a_stream_reconnecting_with_last_event_id_misses_nothing_committed_while_the_publisher_was_down():
    key = new_agency()
    reader, writer = new_user(agency=key), new_user(agency=key)
    push_report = reporter(writer, key)
    access = login(reader)["accessToken"]
    stream = Stream(access, [f"agency={key}"])
    wait_until_subscribed(stream)
    push_report()
    first = stream.next(timeout=10)
    assert first not in (None, "timeout") and stream.last_id
    seen = stream.last_id
    hang_up(stream)
    # Offline: the publisher dies and a change is committed before it is back.
    old = kill_publisher(while_down=push_report)
    wait_for_new_publisher(old)
    time.sleep(1)
    again = Stream(access, [f"agency={key}"], last_event_id=seen)
    try:
        event = again.next(timeout=10)
        assert event not in (None, "timeout"), "the change made while the publisher was down is missing"
        assert f'"agency={key}"' in event["data"]
    finally:
        hang_up(again)


def test_a_sign_out_while_the_publisher_is_down_still_closes_the_stream_within_the_bound():
    email = new_user()
    answer = login(email)
    stream = Stream(answer["accessToken"], ["agency=Gabon"])
    assert stream.status == 200
    wait_until_subscribed(stream)
    signed_out = []
    old = kill_publisher(while_down=lambda: signed_out.append(
        api("POST", "/api/v1/auth/logout", answer["accessToken"]).status_code))
    assert signed_out == [204]
    wait_for_new_publisher(old)
    ended = time.monotonic() + REVOKED_STREAM_BOUND
    try:
        while True:
            event = stream.next(timeout=max(0.1, ended - time.monotonic()))
            if event is None:
                break  # the stream ended
            assert event != "timeout", f"the signed-out login's stream is still open after {REVOKED_STREAM_BOUND} s"
    finally:
        hang_up(stream)


def wait_for_end(stream, bound):
    ended = time.monotonic() + bound
    while True:
        event = stream.next(timeout=max(0.1, ended - time.monotonic()))
        if event is None:
            return
        assert event != "timeout", f"the revoked login's stream is still open after {bound} s"


def test_a_revocation_whose_notification_is_lost_still_closes_the_stream_within_the_bound():
    answer = login(new_user())
    stream = Stream(answer["accessToken"], ["agency=Gabon"])
    assert stream.status == 200
    wait_until_subscribed(stream)
    time.sleep(1)  # the subscribe hook has counted the stream
    try:
        with admin_db() as conn, conn.cursor() as cur:
            # Without the triggers (replica mode): no NOTIFY tideway_revoked at all.
            cur.execute("set session_replication_role = replica")
            cur.execute("update app.logins set revoked_at = now() where id = (select login_id from app.tokens "
                        "where hash = sha256(%s::bytea))", (answer["accessToken"].encode(),))
            assert cur.rowcount == 1
        wait_for_end(stream, REVOKED_STREAM_BOUND)
    finally:
        hang_up(stream)


class TimedStream(Stream):
    """A Stream that notes when it ended."""
    ended_at = None

    def _read(self):
        super()._read()
        self.ended_at = time.monotonic()


def new_conversations(uid, count):
    """Conversations of one member and no message yet: nothing has ever been published to
    them, so any event on one is the event of the push the test makes there."""
    ids = ["conv-" + uuid.uuid4().hex[:12] for _ in range(count)]
    with admin_db() as conn, conn.cursor() as cur:
        for cid in ids:
            cur.execute("insert into app.conversations (id, display_name, created_by) values (%s, 'kills', %s)",
                        (cid, uid))
            cur.execute("insert into app.conversation_members (conversation_id, user_id) values (%s, %s)", (cid, uid))
    return ids


def conversation_streams(access, conversations):
    """An open event stream for every conversation, 10 partitions to a stream (nginx's auth
    subrequest refuses much longer URIs), subscribed: conversation → its stream."""
    streams = {}
    for start in range(0, len(conversations), 10):
        stream = Stream(access, [f"conversation={c}" for c in conversations[start:start + 10]])
        assert stream.status == 200
        streams.update({c: stream for c in conversations[start:start + 10]})
    wait_until_subscribed(stream)
    return streams


@contextlib.contextmanager
def conversation_writer(email, uid, count):
    """What a writer thread of these tests holds: a Replica signed in as `email` (user
    `uid`), `count` new conversations of its own with their event streams, and the set of
    conversations whose event it has seen (await_event fills it); the streams are hung up
    when the writer is done."""
    access = login(email)["accessToken"]
    client = Replica(Client(token=access))
    conversations = new_conversations(uid, count)
    streams = conversation_streams(access, conversations)
    try:
        yield client, conversations, streams, set()
    finally:
        for stream in set(streams.values()):
            hang_up(stream)


def await_event(stream, cid, conversations, seen, pushed_at, problems):
    """Reads `stream` until an event names conversation `cid` (an event may name several of
    `conversations`: all go into `seen`) and answers the push's lag; None, with the miss in
    `problems`, when EVENT_BOUND passes first."""
    while cid not in seen:
        event = stream.next(timeout=max(0.1, pushed_at + EVENT_BOUND - time.monotonic()))
        if event in (None, "timeout"):
            problems.append(("no event", cid, event))
            return None
        seen.update(c for c in conversations if f'"conversation={c}"' in event["data"])
    return time.monotonic() - pushed_at


def test_20_publisher_kills_under_load_lose_no_event_and_leave_no_revoked_stream_open():
    """Issue 20, must show: pushes, pulls and event streams go on while `tideway events` is
    killed 20 times; every push (each to a partition of its own, so no other event can stand
    in for it) produces its event, and a login signed out while the publisher was down has
    its stream closed within the bound."""
    writers, per_writer = 3, 80
    stop, outcomes, problems = threading.Event(), [], []

    def write(email, uid):
        with conversation_writer(email, uid, per_writer) as (client, conversations, streams, seen):
            for cid in conversations:
                stream = streams[cid]
                if stop.is_set():
                    break
                mid = uuid.uuid4().hex
                pushed_at = time.monotonic()
                result = client.push_one({"collection": "chatMessages", "partition": f"conversation={cid}", "id": mid,
                                          "op": "insert", "doc": {"text": "kill", "timestamp": "2026-11-21T10:00:00Z"}})
                if result["status"] != "applied":
                    problems.append(("push", result))
                    continue
                lag = await_event(stream, cid, conversations, seen, pushed_at, problems)
                if lag is not None:
                    outcomes.append(lag)
                r = client.client.pull_raw({"agency=Gabon": None}, limit=5)
                if r.status_code != 200:
                    problems.append(("pull", r.status_code))
                time.sleep(0.3)

    emails = [new_user(agency="Gabon") for _ in range(writers)]
    threads = [threading.Thread(target=write, args=(e, user_id(e))) for e in emails]
    victim = new_user()
    victims = []
    for _ in range(KILLS):
        access = login(victim)["accessToken"]
        stream = TimedStream(access, ["agency=Gabon"])
        assert stream.status == 200
        victims.append((access, stream))
    wait_until_subscribed(victims[-1][1])
    time.sleep(1)  # the subscribe hooks have counted the streams
    for t in threads:
        t.start()
    signed_out = []
    try:
        time.sleep(1)
        for access, _ in victims:
            old = kill_publisher(while_down=lambda: signed_out.append(
                (time.monotonic(), api("POST", "/api/v1/auth/logout", access).status_code)))
            wait_for_new_publisher(old)
            time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(EVENT_BOUND + 30)
    assert [status for _, status in signed_out] == [204] * KILLS
    still_open = []
    for (at, _), (_, stream) in zip(signed_out, victims):
        deadline = at + REVOKED_STREAM_BOUND
        while stream.ended_at is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if stream.ended_at is None or stream.ended_at > deadline:
            still_open.append(round(time.monotonic() - at, 1))
        hang_up(stream)
    lags = sorted(outcomes)
    print(f"\n{KILLS} publisher kills: {len(outcomes)} pushes with their event "
          f"(lag median {lags[len(lags) // 2] * 1000:.0f} ms, max {lags[-1] * 1000:.0f} ms), "
          f"{len(problems)} problems, {len(still_open)} revoked streams open past {REVOKED_STREAM_BOUND} s")
    assert problems == [], problems[:5]
    assert still_open == []
    assert len(outcomes) >= 2 * KILLS
