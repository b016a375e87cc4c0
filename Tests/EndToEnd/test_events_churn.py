"""Revocation churn must not kill nginx workers (docs/operations.md, "nchan"): nchan 1.3.6
crashes a worker when a deleted channel has subscribers in another worker, and every
revocation deletes its login's channel (three times: at once and at the publisher's next two
checkpoints). Streams of many logins open, close and reconnect while some logins sign out
(their channel deleted, never subscribed again) and others lose and regain their agency
(their channel deleted, then subscribed again at once by the reconnect); then nginx's error
log must name no worker that "exited on signal". Bench/nchan_churn.py stresses nchan alone
the same way, harder."""
import random
import threading
import time

from conftest import admin_db, api, login, new_user
from nginx_instances import error_log_size, worker_deaths_since
from test_events import Stream

CHURN_SECONDS = 10


def test_streams_reconnecting_through_revocations_kill_no_nginx_worker():
    offset = error_log_size()
    # Movers: logins that keep their rights but lose one agency, so their reconnects
    # subscribe to the channel just deleted. Leavers: sign out and in again (a new login).
    movers = [new_user(agency="Gabon") for _ in range(3)]
    leavers = [new_user(agency="Gabon") for _ in range(3)]
    tokens = {email: login(email)["accessToken"] for email in movers}
    agency = {email: "Gabon" for email in movers}
    ended_by_server = []
    refused = []
    stop = time.monotonic() + CHURN_SECONDS

    def mover_client(email, token):
        while time.monotonic() < stop:
            stream = Stream(token, [f"agency={agency[email]}"])
            if stream.status != 200:
                refused.append(stream.status)  # moved between the lookup and the request
                time.sleep(0.05)
                continue
            if stream.next(timeout=random.uniform(0.2, 1.5)) is None:
                ended_by_server.append(email)
            stream.close()

    def leaver_client(email):
        while time.monotonic() < stop:
            token = login(email)["accessToken"]
            streams = [Stream(token, ["agency=Gabon"]) for _ in range(2)]
            time.sleep(random.uniform(0.1, 0.8))
            assert api("POST", "/api/v1/auth/logout", token).status_code == 204
            for stream in streams:
                if stream.status == 200:
                    assert stream.next(timeout=10) is None, "a signed-out login's stream stayed open"
                    ended_by_server.append(email)
                    stream.close()

    def mover():
        with admin_db() as db, db.cursor() as cur:
            while time.monotonic() < stop:
                time.sleep(random.uniform(0.2, 0.6))
                email = random.choice(movers)
                agency[email] = "WildAid" if agency[email] == "Gabon" else "Gabon"
                cur.execute("update app.users set agency = %s where email = %s", (agency[email], email))

    failures = []

    def guarded(target, *args):
        try:
            target(*args)
        except Exception as error:  # noqa: BLE001 - reported below, with the deaths
            failures.append(repr(error))

    threads = [threading.Thread(target=guarded, args=(mover_client, email, tokens[email]))
               for email in movers for _ in range(3)]
    threads += [threading.Thread(target=guarded, args=(leaver_client, email)) for email in leavers]
    threads.append(threading.Thread(target=guarded, args=(mover,)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=CHURN_SECONDS + 30)
    # The publisher deletes each revocation's channels again at its next two checkpoints (5 s
    # apart): let them happen while the last reconnected streams are still open.
    lingering = [Stream(tokens[email], [f"agency={agency[email]}"]) for email in movers]
    time.sleep(10.5)
    for stream in lingering:
        stream.close()

    deaths = worker_deaths_since(offset)
    assert not deaths, f"nginx workers died during revocation churn: {deaths}"
    assert not failures, failures
    assert not any(thread.is_alive() for thread in threads), "a churn client hung"
    # The churn happened: revocations ended many open streams.
    assert len(ended_by_server) >= 20, (len(ended_by_server), refused)
