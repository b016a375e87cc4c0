"""Idle polls answered from the worker's memory (issue 22, docs/sync-protocol.md, "Pull",
on idle polls): never documents, always the cursor asked with, and never after a change that
could end the token or the right, whichever path made it (the API, the back office's
tables, an operator's SQL), nor after a write acknowledged before the poll, nor while the
worker's listening connection is down — each checked at once, without sleeping.

Whether an answer came from memory is told from the attacker's side of the database: with
EXECUTE on app.unchanged taken from the workers' role, every poll PostgreSQL would answer
fails, so a 200 can only have come from memory."""
import time
import uuid

import pytest

from conftest import URL, admin_db, workers_refused, login, new_user
from synclib import Client, change, doc_for, new_agency, new_conversation, new_team, user_id
from test_teams import grant, revoke

UNCHANGED = "app.unchanged(bytea, text[], bigint[], bigint[])"


def database_refuses_idle_checks():
    return workers_refused(UNCHANGED)


def at_the_end(client, cursors):
    """Pulls until every partition is at its end; its cursors."""
    for _ in range(5):
        answer = client.pull(cursors)
        if all(e["status"] == "ok" and not e["more"] and not e["changes"] for e in answer.values()):
            return {p: e["cursor"] for p, e in answer.items()}
        cursors = {p: e["cursor"] for p, e in answer.items()}
    raise AssertionError(answer)


def remembered(client, cursors):
    """Polls idle until every worker answered one from PostgreSQL (and so remembers the
    token, its partitions and their clocks); then proves the answer now comes from memory:
    the same idle answer while PostgreSQL refuses the idle check."""
    for _ in range(8):  # nginx spreads the polls over the workers
        assert_idle(client.pull(cursors), cursors)
    with database_refuses_idle_checks():
        for _ in range(8):
            r = client.pull_raw(cursors)
            assert r.status_code == 200, "an idle poll should have been answered from memory"
            assert_idle(r.json()["partitions"], cursors)


def assert_idle(answer, cursors):
    assert answer == {p: {"status": "ok", "changes": [], "cursor": c, "more": False} for p, c in cursors.items()}


def officer_at_the_end(partitions=None):
    key = new_agency()
    email = new_user(agency=key)
    officer = Client(email)
    asked = partitions(officer, key) if partitions else {f"agency={key}": None}
    cursors = at_the_end(officer, asked)
    # Presence may write the officer's own document while signing in: settle it first.
    return officer, key, at_the_end(officer, cursors)


def assert_unauthenticated(client, cursors):
    r = client.pull_raw(cursors)
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated", r.text


def test_an_answer_from_memory_has_no_documents_and_the_cursor_asked_with():
    officer, key, cursors = officer_at_the_end()
    remembered(officer, cursors)
    # A write by someone else, acknowledged before the poll, is in the very next answer.
    writer = Client(new_user(agency=key))
    d = f"mem-{uuid.uuid4().hex}"
    writer.push([change("insert", "reports", f"agency={key}", d, doc_for("reports", d))])
    # (No idle check at all: the worker heard of the commit, so the pull reads the change.)
    with database_refuses_idle_checks():
        answer = officer.pull(cursors)
    assert [c["id"] for c in answer[f"agency={key}"]["changes"]] == [d]
    cursors = at_the_end(officer, {p: e["cursor"] for p, e in answer.items()})
    remembered(officer, cursors)


def test_partitions_never_checked_are_not_answered_from_memory():
    officer, key, cursors = officer_at_the_end()
    remembered(officer, cursors)
    # The same token asking, besides, a partition it may not read, with a genuine cursor at
    # that partition's end (cursors name partitions, not callers): the server decides.
    other_key = new_agency()
    other = at_the_end(Client(new_user(agency=other_key)), {f"agency={other_key}": None})
    with database_refuses_idle_checks():
        assert officer.pull_raw({**cursors, **other}).status_code != 200
    answer = officer.pull({**cursors, **other})
    assert answer[f"agency={other_key}"] == {"status": "forbidden"}


def test_logout_ends_memory_answers_at_once():
    officer, _, cursors = officer_at_the_end()
    remembered(officer, cursors)
    assert officer.http.post(URL + "/api/v1/auth/logout").status_code == 204
    assert_unauthenticated(officer, cursors)


def test_a_refresh_ends_the_old_access_token_at_once():
    key = new_agency()
    email = new_user(agency=key)
    first = login(email)
    officer = Client(token=first["accessToken"])
    cursors = at_the_end(officer, at_the_end(officer, {f"agency={key}": None}))
    remembered(officer, cursors)
    r = officer.http.post(URL + "/api/v1/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert r.status_code == 200
    assert_unauthenticated(officer, cursors)
    fresh = Client(token=r.json()["accessToken"])
    assert_idle(fresh.pull(cursors), cursors)


@pytest.mark.parametrize("statement", [
    "update app.users set active = false where id = %(uid)s",
    "update app.logins set revoked_at = now() where user_id = %(uid)s",
    "update app.tokens set expires_at = now() - interval '1 second' where login_id in "
    "(select id from app.logins where user_id = %(uid)s)",
    "delete from app.tokens where login_id in (select id from app.logins where user_id = %(uid)s)",
])
def test_every_way_a_token_ends_ends_memory_answers_at_once(statement):
    officer, _, cursors = officer_at_the_end()
    remembered(officer, cursors)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(statement, {"uid": officer.id})
    assert_unauthenticated(officer, cursors)


def test_an_agency_move_and_a_role_change_end_memory_answers_at_once():
    officer, key, cursors = officer_at_the_end()
    remembered(officer, cursors)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set agency = 'Gabon' where id = %s", (officer.id,))
    assert officer.pull(cursors)[f"agency={key}"] == {"status": "forbidden"}

    # An agency admin reads another agency's partition only as a global admin.
    admin_email = new_user(role="globalAdmin", agency=None)
    admin = Client(admin_email)
    cursors = at_the_end(admin, at_the_end(admin, {f"agency={key}": None}))
    remembered(admin, cursors)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set role = 'officer', agency = 'Gabon' where id = %s", (admin.id,))
    assert admin.pull(cursors)[f"agency={key}"] == {"status": "forbidden"}


def test_leaving_a_conversation_ends_memory_answers_at_once():
    def partitions(officer, key):
        colleague = Client(new_user(agency=key))
        return {"conversation=" + new_conversation([officer.id, colleague.id]): None}

    officer, _, cursors = officer_at_the_end(partitions)
    remembered(officer, cursors)
    (conversation,) = cursors
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.conversation_members set active = false where conversation_id = %s and user_id = %s",
                    (conversation.split("=", 1)[1], officer.id))
    assert officer.pull(cursors)[conversation] == {"status": "forbidden"}


def test_a_grant_removed_through_the_api_ends_memory_answers_at_once():
    key = new_agency()
    manager_email = new_user(role="agencyAdmin", agency=key)
    manager = Client(manager_email)
    team = new_team(manager_email, key)
    member = Client(new_user(agency="Gabon"))
    assert grant(manager, team, "user", member.id, "read").status_code == 200
    cursors = at_the_end(member, at_the_end(member, {team: None}))
    remembered(member, cursors)
    assert revoke(manager, team, "user", member.id).status_code == 204
    assert member.pull(cursors)[team] == {"status": "forbidden"}


def listeners():
    """The workers' listening connections (their last statement is the barrier's or LISTEN)."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select pid from pg_stat_activity where usename = 'tideway_worker' "
                    "and query in ('select 1 as heard', 'listen tideway_auth')")
        return [pid for (pid,) in cur.fetchall()]


def test_no_memory_answers_while_the_listener_is_down_and_again_once_it_is_back():
    officer, _, cursors = officer_at_the_end()
    remembered(officer, cursors)
    killed = listeners()
    assert len(killed) >= 1
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select pg_terminate_backend(pid) from unnest(%s::int[]) as pid", (killed,))
    with database_refuses_idle_checks():
        for _ in range(4):
            assert officer.pull_raw(cursors).status_code != 200, "answered from memory without a listener"
    # Back (each worker reconnects within a second): remembered anew from PostgreSQL.
    for _ in range(100):
        if set(listeners()) - set(killed) and len(listeners()) >= len(killed):
            break
        time.sleep(0.1)
    remembered(officer, cursors)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set active = false where id = %s", (officer.id,))
    assert_unauthenticated(officer, cursors)
