"""Push semantics: idempotent retries, merge patches, not_found, insert-as-update, and
documents that cannot move between partitions."""
import threading
import uuid

from conftest import admin_db, new_user
from synclib import PUSH_LOG_INDEX, Client, change, counts, doc_for, ensure_user_document, new_agency


def row(table, doc_id):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(f"select partition, doc, deleted, version, seq from sync.{table} where id = %s", (doc_id,))
        return cur.fetchone()


def xmins(uid, change_id):
    """The transactions that last wrote the user's presence, and the push log's row of a change."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select (select xmin::text from app.users where id = %s::uuid), "
                    "(select xmin::text from sync.users where id = %s), (select doc->>'presence' from sync.users where id = %s), "
                    "(select xmin::text from app.push_log where user_id = %s::uuid and change_id = %s)",
                    (uid, uid, uid, uid, change_id))
        return cur.fetchone()


def statuses(results):
    return [r["status"] if r["status"] != "rejected" else r["error"]["code"] for r in results]


def test_a_retried_push_writes_nothing_twice_and_answers_duplicate():
    officer = Client("gabon.officer1@demo.tideway")
    p = "agency=Gabon"
    r1, r2 = f"idem-{uuid.uuid4().hex}", f"idem-{uuid.uuid4().hex}"
    officer.push([change("insert", "reports", p, r2, doc_for("reports", r2))])
    batch = [change("insert", "reports", p, r1, doc_for("reports", r1)),
             change("update", "reports", p, r1, {"draft": False}),
             change("delete", "reports", p, r2),
             change("insert", "reports", p, "bad", {"_id": "bad"}),  # invalid: no timestamp
             change("update", "reports", p, f"missing-{uuid.uuid4().hex}", {"draft": True})]
    client_id = uuid.uuid4().hex
    first = officer.push(batch, client_id)
    assert statuses(first) == ["applied", "applied", "applied", "invalid", "not_found"]
    before = counts(), row("reports", r1), row("reports", r2)
    again = officer.push(batch, client_id)
    assert statuses(again) == ["duplicate", "duplicate", "duplicate", "invalid", "not_found"]
    assert [r.get("version") for r in again[:3]] == [r.get("version") for r in first[:3]]
    assert (counts(), row("reports", r1), row("reports", r2)) == before
    # The same change ids from another client are new changes.
    other = officer.push([change("update", "reports", p, r1, {"draft": True}, change_id=batch[1]["changeId"])])
    assert statuses(other) == ["applied"]


def test_a_retry_sent_while_the_first_attempt_runs_writes_once():
    officer = Client("gabon.officer2@demo.tideway")
    p = "agency=Gabon"
    doc_ids = [f"race-{uuid.uuid4().hex}" for _ in range(50)]
    batch = [change("insert", "reports", p, d, doc_for("reports", d)) for d in doc_ids]
    client_id = uuid.uuid4().hex
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(officer.push(batch, client_id))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 4
    applied = sorted(statuses(a).count("applied") for a in answers)
    assert applied == [0, 0, 0, 50], applied
    assert all(set(statuses(a)) <= {"applied", "duplicate"} for a in answers)
    assert all(row("reports", d)[3] == 1 for d in doc_ids), "every document written exactly once"


def test_two_clients_editing_different_fields_both_keep_their_edits():
    one, two = Client("gabon.officer1@demo.tideway"), Client("gabon.officer2@demo.tideway")
    p, r = "agency=Gabon", f"merge-{uuid.uuid4().hex}"
    doc = {**doc_for("reports", r), "vessel": {"name": "Old", "homePort": "Libreville", "nationality": "Gabon",
                                                "permitNumber": "P-1"},
           "captain": {"name": "Old Captain", "license": "L-1"}}
    one.push([change("insert", "reports", p, r, doc)])
    assert statuses(one.push([change("update", "reports", p, r, {"vessel": {"name": "Amani"}})])) == ["applied"]
    assert statuses(two.push([change("update", "reports", p, r, {"captain": {"name": "Ndong"}, "draft": None})])) == ["applied"]
    stored = row("reports", r)[1]
    assert stored["vessel"] == {**doc["vessel"], "name": "Amani"}
    assert stored["captain"] == {"name": "Ndong", "license": "L-1"}
    assert "draft" not in stored  # null in a merge patch removes the field
    assert stored["timestamp"] == doc["timestamp"]


def test_update_or_delete_of_a_deleted_or_unknown_document_is_not_found():
    officer = Client("gabon.officer1@demo.tideway")
    p, r = "agency=Gabon", f"gone-{uuid.uuid4().hex}"
    officer.push([change("insert", "reports", p, r, doc_for("reports", r)), change("delete", "reports", p, r)])
    before = counts(), row("reports", r)
    results = officer.push([change("update", "reports", p, r, {"draft": False}),
                            change("delete", "reports", p, r),
                            change("update", "reports", p, "never-" + uuid.uuid4().hex, {"draft": False}),
                            change("delete", "photos", p, "never-" + uuid.uuid4().hex)])
    assert statuses(results) == ["not_found"] * 4
    after = counts(), row("reports", r)
    assert after[1] == before[1]
    # Only the push log grew (rejections are logged, so that a retry gets the same answer).
    i = PUSH_LOG_INDEX
    assert after[0][:i] + after[0][i + 1:] == before[0][:i] + before[0][i + 1:]


def test_insert_of_an_existing_id_is_an_update_and_revives_a_deleted_one():
    officer = Client("gabon.officer1@demo.tideway")
    p, r = "agency=Gabon", f"again-{uuid.uuid4().hex}"
    officer.push([change("insert", "reports", p, r, doc_for("reports", r))])
    results = officer.push([change("insert", "reports", p, r, {**doc_for("reports", r), "draft": False})])
    assert statuses(results) == ["applied"] and results[0]["version"] == "2"
    assert row("reports", r)[1]["draft"] is False
    officer.push([change("delete", "reports", p, r)])
    results = officer.push([change("insert", "reports", p, r, doc_for("reports", r))])
    assert statuses(results) == ["applied"] and results[0]["version"] == "4"
    assert row("reports", r)[2] is False


def test_a_document_cannot_move_to_another_partition():
    admin = Client("admin@demo.tideway")
    m = f"move-{uuid.uuid4().hex}"
    admin.push([change("insert", "mpas", "agency=Gabon", m, doc_for("mpas", m))])
    before = row("mpas", m), counts()
    results = admin.push([change("insert", "mpas", "agency=WildAid", m, doc_for("mpas", m)),
                          change("update", "mpas", "agency=WildAid", m, {"name": "moved"}),
                          change("delete", "mpas", "agency=WildAid", m)])
    assert statuses(results) == ["invalid", "not_found", "not_found"]
    assert row("mpas", m) == before[0]
    # Between two agencies' officers: the other agency's row is not theirs to take over.
    key = new_agency()
    stranger = Client(new_user(agency=key))
    r = f"move-{uuid.uuid4().hex}"
    Client("gabon.officer1@demo.tideway").push([change("insert", "reports", "agency=Gabon", r, doc_for("reports", r))])
    kept = row("reports", r)
    results = stranger.push([change("insert", "reports", f"agency={key}", r, doc_for("reports", r))])
    assert results[0]["status"] == "rejected"
    assert row("reports", r) == kept


def test_pushes_of_new_documents_only_still_answer_retries_and_missing_rights():
    """A push of new documents only skips the reads (one round trip, WritePath.applyFirstPush):
    a retry, whole or with new changes, is still found in the push log, and a partition
    without the write right is still refused change by change."""
    officer = Client("gabon.officer1@demo.tideway")
    p = "agency=Gabon"
    ids = [f"first-{uuid.uuid4().hex}" for _ in range(3)]
    client_id = uuid.uuid4().hex
    lone = [change("insert", "reports", p, ids[0], doc_for("reports", ids[0]))]
    first = officer.push(lone, client_id)
    assert statuses(first) == ["applied"]
    before = counts(), row("reports", ids[0])
    again = officer.push(lone, client_id)
    assert statuses(again) == ["duplicate"] and again[0]["version"] == first[0]["version"]
    assert (counts(), row("reports", ids[0])) == before
    more = lone + [change("insert", "reports", p, d, doc_for("reports", d)) for d in ids[1:]]
    assert statuses(officer.push(more, client_id)) == ["duplicate", "applied", "applied"]
    assert [row("reports", d)[3] for d in ids] == [1, 1, 1]
    theirs, ours = f"first-{uuid.uuid4().hex}", f"first-{uuid.uuid4().hex}"
    results = officer.push([change("insert", "reports", "agency=WildAid", theirs, doc_for("reports", theirs)),
                            change("insert", "reports", p, ours, doc_for("reports", ours))], client_id)
    assert statuses(results) == ["forbidden", "applied"]
    assert row("reports", theirs) is None and row("reports", ours)[3] == 1


def test_a_push_marks_its_user_on_line_in_its_own_transaction():
    """Presence, when due, rides in the push's transaction rather than one of its own after
    it: one WAL flush before the answer, not two (docs/performance/round-06.md, "The write's tail").
    Both ways a push goes: new documents only (one round trip) and the usual one."""
    email = new_user()
    first = Client(email)
    ensure_user_document(first.id, email)
    p = "agency=Gabon"
    rid = f"presence-{uuid.uuid4().hex}"
    insert = change("insert", "reports", p, rid, doc_for("reports", rid))
    assert statuses(first.push([insert])) == ["applied"]
    users, user_doc, presence, push = xmins(first.id, insert["changeId"])
    assert presence == "On-Line"
    assert users == user_doc == push, "presence touched in the push's own transaction"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select app.sweep_presence(0)")  # as if 60 s had passed without a sync
    assert xmins(first.id, insert["changeId"])[2] == "Off-Line"
    # A new login is due at once; an update needs the push's reads (the usual way).
    again = Client(email)
    update = change("update", "reports", p, rid, {"draft": True})
    assert statuses(again.push([update])) == ["applied"]
    users, user_doc, presence, push = xmins(first.id, update["changeId"])
    assert presence == "On-Line"
    assert users == user_doc == push, (users, user_doc, push)
