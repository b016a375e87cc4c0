"""Several nginx instances sharing the public port (Deploy/render-nginx.sh NGINX_INSTANCES,
the dev stack's default 2), each with its own nchan: a stream lands on whichever instance the
kernel hands its connection, so `tideway events` must publish in each, close a revoked
login's streams in each, and count a login's streams over all of them. Streams are opened
until both instances hold some (the kernel spreads connections by their addresses and ports),
so every check below covers streams of both."""
import time

import pytest

from conftest import admin_db, api, login, new_user
from test_events import Stream, push_report
from test_events_stalled import InstancePublisher, publisher_sockets

pytestmark = pytest.mark.skipif(len(publisher_sockets()) < 2, reason="the stack runs one nginx instance")


def login_channel(user_id):
    """The channel of the user's login (the one its streams' subscribe hook counted)."""
    deadline = time.time() + 5
    while time.time() < deadline:
        with admin_db() as db, db.cursor() as cur:
            cur.execute("select login_id::text from app.event_streams where user_id::text = %s", (user_id,))
            row = cur.fetchone()
        if row:
            return "l" + row[0].replace("-", "").lower()
        time.sleep(0.05)
    raise AssertionError("the stream's subscribe hook was never counted")


def streams_on_every_instance(token, user_id, partitions, most=40):
    """Opens streams until every instance holds at least one of them."""
    instances = [InstancePublisher(path) for path in publisher_sockets()]
    streams, channel = [], None
    while len(streams) < most:
        stream = Stream(token, partitions)
        assert stream.status == 200
        streams.append(stream)
        channel = channel or login_channel(user_id)
        deadline = time.time() + 5
        while sum(i.held(channel) for i in instances) < len(streams) and time.time() < deadline:
            time.sleep(0.05)
        held = [i.held(channel) for i in instances]
        assert sum(held) == len(streams), held
        if min(held) > 0:
            return streams, held
    raise AssertionError(f"{most} streams all landed on one instance: {held}")


def test_an_event_reaches_streams_on_every_instance_and_a_logout_closes_them_all():
    email = new_user(agency="Gabon")
    answer = login(email)
    streams, held = streams_on_every_instance(answer["accessToken"], answer["user"]["id"], ["agency=Gabon"])
    push_report("gabon.officer2@demo.tideway")
    for stream in streams:
        event = stream.next()
        assert event not in (None, "timeout"), (event, held)
        assert '"agency=Gabon"' in event["data"]
    assert api("POST", "/api/v1/auth/logout", answer["accessToken"]).status_code == 204
    for stream in streams:
        assert stream.next(timeout=10) is None, held  # ended on whichever instance held it


def test_the_stream_count_behind_presence_is_the_sum_over_the_instances():
    answer = login(new_user(agency="Gabon"))
    user_id = answer["user"]["id"]
    streams, held = streams_on_every_instance(answer["accessToken"], user_id, ["agency=Gabon"])

    def count():
        with admin_db() as db, db.cursor() as cur:
            cur.execute("select open from app.event_streams where user_id::text = %s", (user_id,))
            row = cur.fetchone()
            return row[0] if row else None

    with admin_db() as db, db.cursor() as cur:
        # A count gone wrong (hooks nginx dropped), old enough for the recount to correct it.
        cur.execute("update app.event_streams set open = 1, updated_at = now() - interval '1 minute' "
                    "where user_id::text = %s", (user_id,))
    # A round corrects only what nginx says twice, two seconds apart: ask until one has.
    deadline = time.time() + 20
    while count() != len(streams) and time.time() < deadline:
        with admin_db() as db, db.cursor() as cur:
            cur.execute("notify tideway_streams_check")
        time.sleep(3)
    assert count() == len(streams), held
    for stream in streams:
        stream.close()
