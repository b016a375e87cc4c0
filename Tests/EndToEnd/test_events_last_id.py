"""A reconnect's Last-Event-ID, checked by the worker before nchan reads it (docs/sync-protocol.md,
"Change events"): an id that is not nchan's form is the contract's 400 and never reaches nchan
(which answered some with a bare 400 of its own and once killed an nginx worker among them);
a well-formed id of another set of channels (the login gained or lost a partition since) or of
another login's stream opens the stream, which hears the next change. Run on two nginx
instances by `make test`."""
import time

from conftest import error_of, login, new_user
from nginx_instances import error_log_size, worker_deaths_since
from test_events import Stream, push_report, wait_until_subscribed


def an_event_id(token, partitions):
    """The id of an event a stream of `partitions` heard (its stream closed after)."""
    stream = Stream(token, partitions)
    try:
        wait_until_subscribed(stream)
        push_report("gabon.officer2@demo.tideway")
        assert stream.next() not in (None, "timeout")
        assert stream.last_id
        return stream.last_id
    finally:
        stream.hang_up()


def next_of_gabon(stream, timeout=10):
    """The stream's next event of agency=Gabon (a login's own partitions have events of their
    own: its presence), or None or "timeout"."""
    deadline = time.time() + timeout
    while True:
        event = stream.next(timeout=max(0.1, deadline - time.time()))
        if event in (None, "timeout") or '"agency=Gabon"' in event["data"]:
            return event
        if time.time() > deadline:
            return "timeout"


def hear_the_next_push(streams):
    """Every stream is open, and after what it replays, hears the next change of agency=Gabon."""
    assert [s.status for s in streams] == [200] * len(streams), [s.status for s in streams]
    wait_until_subscribed(streams[-1])
    for s in streams:  # what a stream replays comes at once
        while s.next(timeout=0.5) not in ("timeout", None):
            pass
    push_report("gabon.officer2@demo.tideway")
    for s in streams:
        event = next_of_gabon(s)
        assert event not in (None, "timeout"), event


def test_an_id_not_of_nchans_form_is_the_contracts_400_and_kills_no_worker():
    token = login(new_user(agency="Gabon"))["accessToken"]
    last = an_event_id(token, ["agency=Gabon"])
    time_part = last.split(":")[0]
    offset = error_log_size()
    malformed = {
        "words": "garbage",
        "huge": f"{time_part}:[0]" + ",-" * 1500,
        "binary": b"\x01\x7f\xfe\xff" + last.encode(),
        "negative time": "-" + last,
        "no time": ":-,[0],-",
        "[ without ]": f"{time_part}:-,[0,-",
        "two events' tags": f"{time_part}:[0],[1],-",
        "a tag past 16 bits": f"{time_part}:-,[99999],-",
        "a negative tag": f"{time_part}:-,[-7],-",
        "spaces": f"{time_part}: -,[0],-",
    }
    for kind, value in malformed.items():
        stream = Stream(token, ["agency=Gabon"], headers={"Last-Event-ID": value})
        try:
            # (error_of's message would read a stream's body, which never ends)
            assert stream.status == 400, (kind, stream.status)
            error_of(stream.response, 400, "bad_request")
        except AssertionError as failure:
            raise AssertionError(f"{kind}: {failure}") from None
        finally:
            stream.hang_up()
    # nchan takes a position from these before Last-Event-ID, with its own parse of them.
    for header in ({"If-None-Match": f"{time_part}:-,-,-,-,[0]"},
                   {"If-Modified-Since": "Sat, 01 Jan 2028 00:00:00 GMT", "If-None-Match": "[0],-"}):
        stream = Stream(token, ["agency=Gabon"], headers=header)
        try:
            assert stream.status == 400, (header, stream.status)
            error_of(stream.response, 400, "bad_request")
        finally:
            stream.hang_up()
    assert not worker_deaths_since(offset), "an nginx worker died"


def test_well_formed_ids_that_do_not_fit_the_stream_open_it_and_it_hears_the_next_change():
    answer = login(new_user(agency="Gabon"))
    token, me = answer["accessToken"], answer["user"]["id"]
    own = an_event_id(token, ["agency=Gabon"])
    others = an_event_id(login(new_user(agency="Gabon"))["accessToken"], ["agency=Gabon"])
    time_part = own.split(":")[0]
    offset = error_log_size()
    ids = {
        "another login's stream": others,
        "more tags": f"{time_part}:-,[0],-,-,-,-",
        "fewer tags": f"{time_part}:[0]",
        "300 tags": f"{time_part}:[0]" + ",-" * 299,
        "long ago": "1000000000:-,[0],-",
        "a day ahead": f"{int(time.time()) + 86400}:-,[0],-",
        "the stream's own id again": own,
    }
    streams = [Stream(token, ["agency=Gabon"], last_event_id=value) for value in ids.values()]
    # More than four channels: nchan keeps such an id's tags apart from the first four.
    wide = ["agency=Gabon", f"user={me}", "all-users=all-the-users"]
    streams.append(Stream(token, wide, last_event_id=an_event_id(token, wide)))
    # No Last-Event-ID: an empty one, and nchan's query argument (the worker reads neither).
    streams.append(Stream(token, ["agency=Gabon"], headers={"Last-Event-ID": ""}))
    streams.append(Stream(token, ["agency=Gabon"], query="last_event_id=garbage%5B"))
    try:
        hear_the_next_push(streams)
        assert not worker_deaths_since(offset), "an nginx worker died"
    finally:
        for s in streams:
            s.hang_up()


def test_a_stream_resumes_after_its_login_gained_or_lost_a_partition():
    """The id of a stream of one set of partitions, sent by a stream of another: it opens and
    replays what was published while the client was away, then hears what comes next."""
    answer = login(new_user(agency="Gabon"))
    token, me = answer["accessToken"], f"user={answer['user']['id']}"
    offset = error_log_size()
    for before, after in ((["agency=Gabon"], ["agency=Gabon", me]), (["agency=Gabon", me], ["agency=Gabon"])):
        last = an_event_id(token, before)
        push_report("gabon.officer2@demo.tideway")  # while no stream was open
        again = Stream(token, after, last_event_id=last)
        try:
            assert again.status == 200, again.status
            missed = next_of_gabon(again)
            assert missed not in (None, "timeout"), missed
            hear_the_next_push([again])
        finally:
            again.hang_up()
    assert not worker_deaths_since(offset), "an nginx worker died"
