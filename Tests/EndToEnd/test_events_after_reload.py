"""Event streams reconnecting after nginx reloaded. A reload ends every open stream, and the
client reconnects with the Last-Event-ID of the last event it saw, which nginx no longer
holds. nchan 1.3.6 keeps the streams of one set of channels together, and the second such
reconnect to one set failed an assertion there and killed the nginx worker (slact/nchan#534,
#720), with every stream and request it held; each stream now has a channel of its own
(Deploy/nginx/tideway.conf.template, the /_events/ location)."""
import threading

from conftest import login, new_user
from nginx_instances import error_log_size, reload, worker_deaths_since
from test_events import Stream, push_report, wait_until_subscribed


def test_streams_reconnecting_with_an_id_from_before_a_reload_open_hear_the_next_change_and_kill_no_worker():
    token = login(new_user(agency="Gabon"))["accessToken"]
    stream = Stream(token, ["agency=Gabon"])
    wait_until_subscribed(stream)
    push_report("gabon.officer2@demo.tideway")
    assert stream.next() not in (None, "timeout")
    last_id = stream.last_id
    assert last_id
    offset = error_log_size()
    reload()  # ends the open streams (an old worker may take a while: not waited for)
    stream.close()
    # One after another (the second was the one that killed the worker), then four at once,
    # all on the same login's set of channels with the same id.
    again = [Stream(token, ["agency=Gabon"], last_event_id=last_id) for _ in range(2)]
    opened = []
    threads = [threading.Thread(target=lambda: opened.append(Stream(token, ["agency=Gabon"], last_event_id=last_id)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    again += opened
    try:
        assert [s.status for s in again] == [200] * 6
        wait_until_subscribed(again[-1])
        push_report("gabon.officer2@demo.tideway")
        for s in again:
            event = s.next(timeout=10)
            assert event not in (None, "timeout") and '"agency=Gabon"' in event["data"], event
        assert not worker_deaths_since(offset), "an nginx worker died"
    finally:
        for s in again:
            s.close()
