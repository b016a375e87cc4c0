"""Change events (sync-protocol.md): Server-Sent Events held by nginx's nchan, authorized
by the workers, published from commit notifications."""
import queue
import socket
import threading
import time
import uuid

import requests

from conftest import CA, URL, admin_db, api, login, new_user
from synclib import Client, Replica


class Stream:
    """An open events stream read on a thread: events and the end of the stream go to a queue."""

    def __init__(self, token=None, partitions=(), last_event_id=None, cookies=None, headers=None, query=""):
        query = "&".join(["partition=" + requests.utils.quote(p, safe="") for p in partitions] + ([query] if query else []))
        headers = {"Accept": "text/event-stream", **(headers or {})}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        session = requests.Session()
        session.trust_env = False
        self.response = session.get(f"{URL}/api/v1/sync/events?{query}", headers=headers, cookies=cookies,
                                    stream=True, verify=CA, timeout=(10, 120))
        self.status = self.response.status_code
        self.events = queue.Queue()
        self.last_id = None
        if self.status == 200:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        event = {}
        try:
            for raw in self.response.iter_lines(chunk_size=1, decode_unicode=True):  # SSE: do not wait for 512 bytes
                if raw is None:
                    continue
                if raw == "":
                    if "data" in event:
                        self.events.put(event)
                    event = {}
                elif raw.startswith(":"):
                    continue
                else:
                    field, _, value = raw.partition(":")
                    event[field] = value.lstrip()
                    if field == "id":
                        self.last_id = event[field]
        except Exception:
            pass
        self.events.put(None)  # the stream ended

    def next(self, timeout=10):
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return "timeout"

    def close(self):
        self.response.close()

    def hang_up(self):
        """Closes the stream at once (close() waits for the reading thread, which waits for
        the next keep-alive comment: up to 25 s)."""
        try:
            self.response.raw._fp.fp.raw._sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass  # already closed, or an answer that was not a stream
        self.close()


def push_report(email, agency="Gabon"):
    client = Replica(Client(token=login(email)["accessToken"]))
    rid = uuid.uuid4().hex[:24]
    doc = {"timestamp": "2026-11-21T10:00:00Z",
           "vessel": {"name": "Evented", "homePort": "Libreville", "nationality": "GA", "permitNumber": "E-1"}}
    result = client.push_one({"collection": "reports", "partition": f"agency={agency}", "id": rid, "op": "insert", "doc": doc})
    assert result["status"] == "applied", result


def wait_until_subscribed(stream):
    # nchan answers the handshake at once; give its subscribe hook a moment.
    time.sleep(0.3)


def test_a_push_reaches_a_subscriber_and_no_other_agency():
    officer = new_user(agency="Gabon")
    other = new_user(agency="WildAid")
    mine = Stream(login(officer)["accessToken"], ["agency=Gabon"])
    theirs = Stream(login(other)["accessToken"], ["agency=WildAid"])
    assert mine.status == 200 and theirs.status == 200
    assert mine.response.headers["Content-Type"].startswith("text/event-stream")
    wait_until_subscribed(mine)
    push_report("gabon.officer2@demo.tideway")
    event = mine.next()
    assert event not in (None, "timeout"), event
    assert event["event"] == "change"
    assert '"agency=Gabon"' in event["data"]
    assert theirs.next(timeout=2) == "timeout"
    mine.close()
    theirs.close()


def test_forbidden_invalid_and_unauthenticated_subscriptions_are_refused():
    token = login("gabon.officer1@demo.tideway")["accessToken"]
    forbidden = Stream(token, ["agency=Gabon", "agency=WildAid"])
    assert forbidden.status == 403 and forbidden.response.json()["error"]["code"] == "forbidden"
    assert Stream(token, ["foo"]).status == 400
    assert Stream(token, []).status == 400
    assert Stream("not-a-token", ["agency=Gabon"]).status == 401
    assert Stream(None, ["agency=Gabon"]).status == 401
    # the internal locations are not reachable from outside
    assert api("GET", "/_events/pabc").status_code == 404
    assert api("GET", "/_events_hook/subscribe").status_code == 404


def test_logout_closes_an_open_stream():
    email = new_user(agency="Gabon")
    answer = login(email)
    stream = Stream(answer["accessToken"], ["agency=Gabon"])
    assert stream.status == 200
    wait_until_subscribed(stream)
    assert api("POST", "/api/v1/auth/logout", answer["accessToken"]).status_code == 204
    assert stream.next(timeout=10) is None  # the stream ended
    assert Stream(answer["accessToken"], ["agency=Gabon"]).status == 401


def test_moving_to_another_agency_closes_the_stream_and_reconnecting_is_refused():
    email = new_user(agency="Gabon")
    answer = login(email)
    stream = Stream(answer["accessToken"], ["agency=Gabon"])
    wait_until_subscribed(stream)
    with admin_db() as db, db.cursor() as cur:
        cur.execute("update app.users set agency = 'WildAid' where email = %s", (email,))
    assert stream.next(timeout=10) is None
    assert Stream(answer["accessToken"], ["agency=Gabon"]).status == 403
    assert Stream(answer["accessToken"], ["agency=WildAid"]).status == 200


def test_a_user_with_many_logins_moved_away_has_every_stream_closed_and_events_go_on():
    # One revocation names every login of the user: 35 login channels are over nchan's
    # 1024-byte channel id in one DELETE, which it refuses (EventPublisher.loginsPerDelete).
    # The stream of the last login is in the second request; another member's stream on
    # the partition must still get the next push's event.
    email = new_user(agency="Gabon")
    tokens = [login(email)["accessToken"] for _ in range(35)]
    with admin_db() as db, db.cursor() as cur:
        cur.execute("select length(app.login_channels(id)) from app.users where email = %s", (email,))
        assert cur.fetchone()[0] > 1024
    moved = Stream(tokens[-1], ["agency=Gabon"])
    staying = Stream(login(new_user(agency="Gabon"))["accessToken"], ["agency=Gabon"])
    assert moved.status == 200 and staying.status == 200
    wait_until_subscribed(moved)
    with admin_db() as db, db.cursor() as cur:
        cur.execute("update app.users set agency = 'WildAid' where email = %s", (email,))
    assert moved.next(timeout=10) is None  # the stream ended
    push_report("gabon.officer2@demo.tideway")
    event = staying.next(timeout=10)
    assert event not in (None, "timeout"), "no event after the revocation"
    assert "agency=Gabon" in event["data"]


def test_a_stream_of_fifty_partitions_is_opened_and_hears_its_last_one():
    # 1 to 50 partitions a stream (EventRoutes.maxPartitions): their channels' ids and the
    # login's are one id of 1,633 bytes to nchan, which refused more than 1024 until the
    # template raised nchan_max_channel_id_length.
    from test_events_restart import new_conversations
    email = new_user(agency="Gabon")
    with admin_db() as db, db.cursor() as cur:
        cur.execute("select id from app.users where email = %s", (email,))
        uid = cur.fetchone()[0]
    conversations = new_conversations(uid, 50)
    token = login(email)["accessToken"]
    stream = Stream(token, [f"conversation={c}" for c in conversations])
    assert stream.status == 200, stream.response.text
    wait_until_subscribed(stream)
    last = f"conversation={conversations[-1]}"
    result = Replica(Client(token=token)).push_one({"collection": "chatMessages", "partition": last, "id": uuid.uuid4().hex,
                                                   "op": "insert", "doc": {"text": "hi", "timestamp": "2026-11-21T10:00:00Z"}})
    assert result["status"] == "applied", result
    event = stream.next(timeout=10)
    assert event not in (None, "timeout") and last in event["data"], event
    assert Stream(token, [f"conversation={c}" for c in conversations] + ["agency=Gabon"]).status == 400


def test_a_reconnecting_subscriber_learns_what_it_missed():
    token = login(new_user(agency="Gabon"))["accessToken"]
    stream = Stream(token, ["agency=Gabon"])
    wait_until_subscribed(stream)
    push_report("gabon.officer2@demo.tideway")
    first = stream.next()
    assert first not in (None, "timeout")
    last_id = stream.last_id
    assert last_id
    stream.close()
    push_report("gabon.officer2@demo.tideway")  # while disconnected
    again = Stream(token, ["agency=Gabon"], last_event_id=last_id)
    missed = again.next()
    assert missed not in (None, "timeout"), missed
    assert '"agency=Gabon"' in missed["data"]
    again.close()


def test_an_open_stream_keeps_its_user_on_line():
    email = new_user(agency=None)
    answer = login(email)
    me = f"user={answer['user']['id']}"
    stream = Stream(answer["accessToken"], [me])
    wait_until_subscribed(stream)

    def presence():
        with admin_db() as db, db.cursor() as cur:
            cur.execute("select app.sweep_presence(0)")  # as if everyone had been idle for a minute
            cur.execute("select doc->>'presence' from sync.users where id = %s", (answer["user"]["id"],))
            return cur.fetchone()[0]

    assert presence() == "On-Line"
    stream.close()
    deadline = time.time() + 10
    while presence() != "Off-Line" and time.time() < deadline:
        time.sleep(0.2)
    assert presence() == "Off-Line"


def test_stream_counts_lost_by_nginx_are_corrected_from_what_nginx_holds():
    # nginx drops a stream's start or end hook when no worker accepts it (a burst of
    # thousands of disconnects): counts as if hooks were lost, then a round of
    # `tideway events`' recount, asked for at once instead of waiting half a minute.
    streaming = login(new_user(agency="Gabon"))
    gone = login(new_user(agency="Gabon"))
    stream = Stream(streaming["accessToken"], ["agency=Gabon"])
    ended = Stream(gone["accessToken"], ["agency=Gabon"])
    wait_until_subscribed(stream)
    wait_until_subscribed(ended)
    ended.close()
    ids = (streaming["user"]["id"], gone["user"]["id"])

    def counts():
        with admin_db() as db, db.cursor() as cur:
            cur.execute("select user_id::text, open from app.event_streams where user_id::text in %s", (ids,))
            return dict(cur.fetchall())

    deadline = time.time() + 10
    while counts() != {ids[0]: 1, ids[1]: 0} and time.time() < deadline:
        time.sleep(0.2)
    assert counts() == {ids[0]: 1, ids[1]: 0}
    with admin_db() as db, db.cursor() as cur:
        # The first login's end of two more streams and the second's end were never told.
        cur.execute("update app.event_streams set open = case when user_id::text = %s then 3 else 1 end, "
                    "updated_at = now() - interval '1 minute' where user_id::text in %s", (ids[0], ids))
        db.commit()
        cur.execute("select app.sweep_presence(0)")
        cur.execute("select doc->>'presence' from sync.users where id = %s", (ids[1],))
        assert cur.fetchone()[0] == "On-Line"  # the stale count keeps a user who left On-Line
    # A round corrects only what nginx says twice, two seconds apart (its count of a new
    # stream lags): ask until one has.
    deadline = time.time() + 20
    while counts() != {ids[0]: 1, ids[1]: 0} and time.time() < deadline:
        with admin_db() as db, db.cursor() as cur:
            cur.execute("notify tideway_streams_check")
        time.sleep(3)
    assert counts() == {ids[0]: 1, ids[1]: 0}
    with admin_db() as db, db.cursor() as cur:
        cur.execute("select app.sweep_presence(0)")
        cur.execute("select id, doc->>'presence' from sync.users where id in %s", (ids,))
        assert dict(cur.fetchall()) == {ids[0]: "On-Line", ids[1]: "Off-Line"}
        db.commit()
    stream.close()


def test_the_back_office_subscribes_with_its_session_cookie():
    s = requests.Session()
    s.trust_env = False
    s.verify = CA
    page = s.get(URL + "/login")
    import re
    csrf = re.search(r'name="_csrf" value="([^"]+)"', page.text).group(1)
    r = s.post(URL + "/login", data={"email": "gabon.admin@demo.tideway", "password": "tideway-demo", "_csrf": csrf},
               allow_redirects=False)
    assert r.status_code == 303
    home = s.get(URL + "/")
    assert 'data-live-partition="agency=Gabon"' in home.text and "/static/live.js" in home.text
    boardings = s.get(URL + "/boardings")
    assert boardings.status_code == 200 and 'data-live-partition="agency=Gabon"' in boardings.text
    stream = Stream(None, ["agency=Gabon"], cookies=s.cookies)
    assert stream.status == 200
    stream.close()
