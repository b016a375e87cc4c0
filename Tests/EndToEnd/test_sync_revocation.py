"""Rights follow the server's state at every pull, and long polls wake on commits."""
import threading
import time
import uuid

from conftest import URL, admin_db, new_user
from synclib import Client, change, doc_for, new_agency, new_conversation, user_id


def test_an_officer_moved_to_another_agency_is_forbidden_the_old_partition_at_once():
    email = new_user(agency="Gabon")
    officer = Client(email)
    answer = officer.pull({"agency=Gabon": None, "agency=WildAid": None}, limit=1)
    assert answer["agency=Gabon"]["status"] == "ok" and answer["agency=WildAid"] == {"status": "forbidden"}
    cursor = answer["agency=Gabon"]["cursor"]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set agency = 'WildAid' where id = %s", (user_id(email),))
    # Same token, next pull: the old partition is gone, even with a cursor it was given.
    answer = officer.pull({"agency=Gabon": cursor, "agency=WildAid": None}, limit=1)
    assert answer["agency=Gabon"] == {"status": "forbidden"}
    assert answer["agency=WildAid"]["status"] == "ok"
    d = f"rv-{uuid.uuid4().hex}"
    results = officer.push([change("insert", "reports", "agency=Gabon", d, doc_for("reports", d))])
    assert results[0]["error"]["code"] == "forbidden"
    partitions = {p["partition"] for p in officer.http.get(URL + "/api/v1/sync/partitions").json()["partitions"]}
    assert "agency=WildAid" in partitions and "agency=Gabon" not in partitions


def test_a_long_poll_wakes_on_another_users_commit_and_returns_the_change():
    key = new_agency()
    p = f"agency={key}"
    watcher, writer = Client(new_user(agency=key)), Client(new_user(agency=key))
    cursor = watcher.pull({p: None})[p]["cursor"]
    answers = []
    t = threading.Thread(target=lambda: answers.append(watcher.pull({p: cursor}, wait=25)))
    t.start()
    time.sleep(0.5)  # let the poll start waiting (it would also be correct if it had not yet)
    assert t.is_alive()
    d = f"lp-{uuid.uuid4().hex}"
    writer.push([change("insert", "reports", p, d, doc_for("reports", d))])
    t.join(25)
    assert not t.is_alive(), "the long poll should have been woken by the commit"
    entry = answers[0][p]
    assert [c["id"] for c in entry["changes"]] == [d]


def test_a_long_poll_with_nothing_new_returns_after_wait_with_no_changes():
    key = new_agency()
    p = f"agency={key}"
    watcher = Client(new_user(agency=key))
    cursor = watcher.pull({p: None})[p]["cursor"]
    started = time.monotonic()
    entry = watcher.pull({p: cursor}, wait=1.5)[p]
    assert time.monotonic() - started >= 1.4
    assert entry["status"] == "ok" and entry["changes"] == [] and entry["more"] is False


def test_a_long_poll_of_a_forbidden_partition_answers_at_once():
    watcher = Client(new_user(agency="Gabon"))
    answer = watcher.pull({"agency=WildAid": None}, wait=20)
    assert answer["agency=WildAid"] == {"status": "forbidden"}


def test_a_poll_with_every_cursor_at_the_end_still_checks_rights_and_clocks():
    """Such a poll is answered by one statement (app.unchanged), not by the pull's range
    scans; it must still see a new change, a lost membership, an agency move
    and a revoked token at once."""
    key = new_agency()
    agency = "agency=" + key
    email = new_user(agency=key)
    officer, colleague = Client(email), Client(new_user(agency=key))
    conversation = "conversation=" + new_conversation([officer.id, colleague.id])
    mine = f"user={officer.id}"

    def to_the_end(cursors):
        answer = officer.pull(cursors)
        assert all(entry["status"] == "ok" and not entry["more"] for entry in answer.values()), answer
        return {p: entry["cursor"] for p, entry in answer.items()}

    def idle(cursors):
        answer = officer.pull(cursors)
        assert all(entry == {"status": "ok", "cursor": cursors[p], "more": False, "changes": []}
                   for p, entry in answer.items()), answer

    cursors = to_the_end({agency: None, conversation: None, mine: None})
    # Presence may write the officer's own document while signing in: settle it first.
    cursors = to_the_end(cursors)
    idle(cursors)

    d = f"idle-{uuid.uuid4().hex}"
    colleague.push([change("insert", "reports", agency, d, doc_for("reports", d))])
    answer = officer.pull(cursors)
    assert [c["id"] for c in answer[agency]["changes"]] == [d]
    cursors[agency] = answer[agency]["cursor"]
    idle(cursors)

    # app.unchanged walks the partitions one by one: a change in the last one asked, the
    # others unchanged, is still seen.
    last = to_the_end({agency: cursors[agency], conversation: cursors[conversation]})
    idle(last)
    m = f"idle-{uuid.uuid4().hex}"
    colleague.push([change("insert", "chatMessages", conversation, m, doc_for("chatMessages", m))])
    answer = officer.pull(last)
    assert answer[agency]["changes"] == [] and [c["id"] for c in answer[conversation]["changes"]] == [m]
    cursors = to_the_end(cursors)
    idle(cursors)

    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.conversation_members set active = false where conversation_id = %s and user_id = %s",
                    (conversation.split("=", 1)[1], officer.id))
    assert officer.pull(cursors)[conversation] == {"status": "forbidden"}
    del cursors[conversation]
    idle(cursors)

    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set agency = 'Gabon' where id = %s", (officer.id,))
    assert officer.pull(cursors)[agency] == {"status": "forbidden"}
    del cursors[agency]
    idle(cursors)

    assert officer.http.post(URL + "/api/v1/auth/logout").status_code == 204
    r = officer.pull_raw(cursors)
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"
