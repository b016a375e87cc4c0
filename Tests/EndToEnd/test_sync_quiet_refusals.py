"""Expected refusals leave no ERROR line in PostgreSQL's log (Migrations/0100, app.refuse):
a retried push (the one-trip path's TW409, answered from the push log the usual way) and a
push to a partition the caller may not write. Read from the server's own log file, between
a test's first request and its last answer: a backend writes its log line before it answers
the worker, so every line of the window is in the file when the answer arrives.

Nothing else changes for them: the retries answer `duplicate`, nothing is written twice
(documents, versions, push log, report history), and a real error is still logged."""
import os
import threading
import uuid

import psycopg2
import pytest

from conftest import STATE, URL, admin_db, error_of, new_user, worker_db
from synclib import Client, change, doc_for

OFFICER = "wildaid.officer1@demo.tideway"
HOME = "agency=WildAid"
ELSEWHERE = "agency=Gabon"
LOG = os.path.join(STATE or "", "log", "postgres.log")


def log_size():
    return os.path.getsize(LOG)


def log_since(offset):
    with open(LOG, "rb") as f:
        f.seek(offset)
        return f.read().decode("utf-8", "replace")


def error_lines(text):
    return [line for line in text.splitlines() if " ERROR: " in line]


def statuses(results):
    return [r["status"] if r["status"] != "rejected" else r["error"]["code"] for r in results]


def test_a_retry_storm_writes_no_error_line_and_nothing_twice():
    me = Client(OFFICER)
    marker = "quiet-" + uuid.uuid4().hex  # in every document: must not reach the log either
    devices, per_push, retries = 4, 5, 6
    pushes = {}
    for d in range(devices):
        ids = [f"{marker}-{d}-{k}" for k in range(per_push)]
        pushes[uuid.uuid4().hex] = [change("insert", "reports", HOME, i, {**doc_for("reports", i), "notes": [{"note": marker}]})
                                    for i in ids]
    start = log_size()

    for client_id, changes in pushes.items():
        assert statuses(me.push(changes, client_id)) == ["applied"] * per_push
    # Retries one after another, then all devices at once (each retry waits on its device's
    # push lock, then reads the first attempt's outcomes).
    for _ in range(retries // 2):
        for client_id, changes in pushes.items():
            assert statuses(me.push(changes, client_id)) == ["duplicate"] * per_push
    answers, failures = [], []

    def retry(client_id, changes):
        try:
            for _ in range(retries - retries // 2):
                answers.append(statuses(Client(token=me.token).push(changes, client_id)))
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(e)

    threads = [threading.Thread(target=retry, args=item) for item in pushes.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert answers == [["duplicate"] * per_push] * (devices * (retries - retries // 2))

    logged = log_since(start)
    assert error_lines(logged) == []
    assert marker not in logged

    ids = [c["id"] for changes in pushes.values() for c in changes]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*), count(*) filter (where version = 1) from sync.reports where id = any(%s)", (ids,))
        assert cur.fetchone() == (len(ids), len(ids))
        cur.execute("select count(*) from app.push_log where client_id = any(%s)", (list(pushes),))
        assert cur.fetchone()[0] == len(ids)
        cur.execute("select count(*) from app.report_history where report_id = any(%s)", (ids,))
        assert cur.fetchone()[0] == len(ids)


def test_a_first_attempt_and_its_retry_racing_write_once_without_error_lines():
    me = Client(OFFICER)
    start = log_size()
    for _ in range(5):
        client_id = uuid.uuid4().hex
        i = "race-" + uuid.uuid4().hex
        changes = [change("insert", "reports", HOME, i, doc_for("reports", i))]
        answers = []
        threads = [threading.Thread(target=lambda: answers.append(statuses(Client(token=me.token).push(changes, client_id))))
                   for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(answers) == [["applied"], ["duplicate"], ["duplicate"]]
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select count(*) from app.report_history where report_id = %s", (i,))
            assert cur.fetchone()[0] == 1
    assert error_lines(log_since(start)) == []


def test_a_push_to_a_partition_without_the_right_is_refused_without_error_lines():
    me = Client(OFFICER)
    start = log_size()
    i, j = "forbidden-" + uuid.uuid4().hex, "allowed-" + uuid.uuid4().hex
    client_id = uuid.uuid4().hex
    results = me.push([change("insert", "reports", ELSEWHERE, i, doc_for("reports", i)),
                       change("insert", "reports", HOME, j, doc_for("reports", j))], client_id)
    assert statuses(results) == ["forbidden", "applied"]
    assert error_lines(log_since(start)) == []
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id from sync.reports where id = any(%s)", ([i, j],))
        assert [r[0] for r in cur.fetchall()] == [j]


def test_a_token_that_does_not_authenticate_is_refused_without_error_lines():
    """An expired access token (every device's routine before it refreshes) and made-up
    tokens (a client spraying guesses): each request answers the contract's 401, changes
    nothing, and leaves no ERROR line in PostgreSQL's log."""
    email = new_user(agency="WildAid")
    expired = Client(email)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.tokens set expires_at = now() - interval '1 second' where login_id in "
                    "(select l.id from app.logins l join app.users u on u.id = l.user_id where u.email = %s)", (email,))
    made_up = [Client(token=uuid.uuid4().hex) for _ in range(3)]
    i = "unauthenticated-" + uuid.uuid4().hex
    start = log_size()
    for client in [expired, *made_up]:
        error_of(client.pull_raw({HOME: None}), 401, "unauthenticated")
        error_of(client.push_raw([change("insert", "reports", HOME, i, doc_for("reports", i))]), 401, "unauthenticated")
        error_of(client.http.get(URL + "/api/v1/me", timeout=60), 401, "unauthenticated")
    assert error_lines(log_since(start)) == []
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from sync.reports where id = %s", (i,))
        assert cur.fetchone()[0] == 0


def test_refuse_raises_a_refusal_and_says_so_when_misused():
    """What app.refuse raises is the refusal the caller asked for; a code that is not a
    refusal still raises, with a LOG line that says so (a caller's bug is seen)."""
    start = log_size()
    with worker_db() as conn, conn.cursor() as cur:
        with pytest.raises(psycopg2.Error) as refused:
            cur.execute("select app.refuse('TW409', 'the push needs its reads')")
        assert refused.value.pgcode == "TW409" and "the push needs its reads" in str(refused.value)
        conn.rollback()
        with pytest.raises(psycopg2.Error) as misused:
            cur.execute("select app.refuse('XX000', 'not a refusal')")
        assert misused.value.pgcode == "XX000"
        conn.rollback()
    logged = log_since(start)
    assert error_lines(logged) == []
    assert any(" LOG: " in line and "app.refuse of XX000 (not a refusal): not a refusal" in line for line in logged.splitlines())


def test_the_worker_cannot_quiet_its_own_errors_and_real_errors_are_logged():
    """Attacker's side: the worker's role may not lower what the server logs, neither for its
    session nor through a function of its own; an error that is no refusal is logged."""
    start = log_size()
    with worker_db() as conn, conn.cursor() as cur:
        with pytest.raises(psycopg2.Error) as denied:
            cur.execute("set log_min_messages = fatal")
        assert denied.value.pgcode == "42501"
        conn.rollback()
        with pytest.raises(psycopg2.Error):
            cur.execute("select 1 / 0")
        conn.rollback()
    assert any("division by zero" in line for line in error_lines(log_since(start)))
