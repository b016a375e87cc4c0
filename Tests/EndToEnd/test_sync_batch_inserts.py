"""New documents of a push are written by one statement per collection
(app.insert_documents, Migrations/repeatable/0005_write_path.sql) and must answer exactly as one app.apply_change
per change would: versions, rejections of ids taken elsewhere, later changes of the same
documents in the same batch, history, retries, and — when a rule refuses the statement —
every change one by one with its own result."""
import json
import uuid

import psycopg2
import pytest

from conftest import admin_db, new_user, worker_db
from synclib import Client, change, doc_for, new_agency


def statuses(results):
    return [r["status"] if r["status"] != "rejected" else r["error"]["code"] for r in results]


def rows(ids):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id, partition, doc, deleted, version from sync.reports where id = any(%s) order by id", (ids,))
        return {r[0]: r[1:] for r in cur.fetchall()}


def new_officer():
    """A new agency's key and the id of an officer of it."""
    key = new_agency()
    email = new_user("officer", key)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id from app.users where email = %s", (email,))
        return key, str(cur.fetchone()[0])


def as_officer(cur, key, uid):
    """The claims the worker sets for that officer, for this transaction."""
    cur.execute("select set_config('tideway.role', 'officer', true), set_config('tideway.agency', %s, true),"
                " set_config('tideway.user_id', %s, true)", (key, uid))


def history(ids):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select report_id, version, op, device from app.report_history where report_id = any(%s) order by report_id, id",
                    (ids,))
        return cur.fetchall()


def test_a_batch_of_new_documents_answers_like_one_change_at_a_time():
    key = new_agency()
    p, other = "agency=" + key, "agency=" + new_agency()
    me = Client(new_user("officer", key))
    taken = f"taken-{uuid.uuid4().hex[:8]}"
    Client(new_user("officer", other[7:])).push([change("insert", "reports", other, taken, doc_for("reports", taken))])
    new = [f"batch-{uuid.uuid4().hex[:8]}" for _ in range(6)]
    batch = [change("insert", "reports", p, d, {**doc_for("reports", d), "location": [9 + i / 10, -1.0]}) for i, d in enumerate(new[:4])]
    batch += [
        change("insert", "reports", p, taken, doc_for("reports", taken)),         # id of another agency's report (defect 9)
        change("update", "reports", p, new[1], {"draft": False}),                 # a new one, changed again
        change("delete", "reports", p, new[2]),                                   # a new one, deleted again
        change("insert", "reports", p, new[4], {"_id": new[4]}),                  # invalid: refused before the database
        change("insert", "dutyChanges", p, new[5], doc_for("dutyChanges", new[5])),  # another collection, alone
        change("insert", "reports", p, new[0], doc_for("reports", new[0])),       # a new one, inserted again
    ]
    client_id = uuid.uuid4().hex
    first = me.push(batch, client_id)
    assert statuses(first) == ["applied"] * 4 + ["forbidden", "applied", "applied", "invalid", "applied", "applied"]
    assert [r.get("version") for r in first] == ["1", "1", "1", "1", None, "2", "2", None, "1", "2"]
    stored = rows(new + [taken])
    assert stored[taken][0] == other  # untouched
    assert "location" not in stored[new[0]][1] and stored[new[0]][3] == 2  # replaced by the second insert
    assert stored[new[1]][1]["draft"] is False and stored[new[1]][1]["location"] == [9.1, -1.0]
    assert stored[new[2]][2] is True and stored[new[3]][1]["location"] == [9.3, -1.0]
    assert new[4] not in stored
    assert [(h[1], h[2]) for h in history([new[1]])] == [(1, "insert"), (2, "update")]
    assert {h[3] for h in history(new[:4])} == {client_id}

    again = me.push(batch, client_id)
    assert statuses(again) == ["duplicate"] * 4 + ["forbidden", "duplicate", "duplicate", "invalid", "duplicate", "duplicate"]
    assert [r.get("version") for r in again] == [r.get("version") for r in first]
    assert rows(new + [taken]) == stored


def test_a_refused_statement_falls_back_to_one_change_at_a_time():
    """Called directly with the claims of an officer: one document of the batch is for a
    partition the officer may not write, so row-level security refuses the statement; each
    change then gets its own result and the others are written."""
    key, uid = new_officer()
    ids = [f"fall-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    parts = ["agency=" + key, "agency=Gabon", "agency=" + key]
    with worker_db() as conn, conn.cursor() as cur:
        as_officer(cur, key, uid)
        cur.execute("select result from app.insert_documents('reports', 'c1', %s, %s, %s, %s::jsonb) order by ord",
                    (["c-" + i for i in ids], ids, parts, json.dumps([doc_for("reports", i) for i in ids])))
        results = [r[0] for r in cur.fetchall()]
        conn.commit()
    assert statuses(results) == ["applied", "forbidden", "applied"]
    assert set(rows(ids)) == {ids[0], ids[2]}
    with pytest.raises(psycopg2.Error):
        with worker_db() as conn, conn.cursor() as cur:
            cur.execute("select * from app.insert_documents('users', null, '{a}', '{a}', '{user=x}', '[{}]'::jsonb)")


def test_unguarded_a_refused_statement_fails_whole_and_writes_nothing():
    """`guarded => false` (a push in one round trip, WritePath.applyFirstPush): no savepoint,
    so the refusal fails the statement itself — the worker then applies the push the usual
    way — and nothing of it stays, not even the documents the rule allowed or their push log."""
    key, uid = new_officer()
    ids = [f"unguarded-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    with worker_db() as conn, conn.cursor() as cur:
        as_officer(cur, key, uid)
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute("select result from app.insert_documents('reports', 'c-unguarded', %s, %s, %s, %s::jsonb,"
                        " guarded => false) order by ord",
                        (["c-" + i for i in ids], ids, ["agency=" + key, "agency=Gabon"],
                         json.dumps([doc_for("reports", i) for i in ids])))
        conn.rollback()
        # Allowed, it writes every document with its version and push-log row, in order.
        as_officer(cur, key, uid)
        cur.execute("select result from app.insert_documents('reports', 'c-unguarded', %s, %s, %s, %s::jsonb,"
                    " guarded => false) order by ord",
                    (["c-" + i for i in ids], ids, ["agency=" + key] * 2, json.dumps([doc_for("reports", i) for i in ids])))
        results = [r[0] for r in cur.fetchall()]
        conn.commit()
    assert [(r["changeId"], r["status"], r["version"]) for r in results] == [("c-" + i, "applied", "1") for i in ids]
    stored = rows(ids)
    assert set(stored) == set(ids)
    assert all(stored[i][:2] == ("agency=" + key, doc_for("reports", i)) for i in ids)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select change_id from app.push_log where client_id = 'c-unguarded' and change_id = any(%s) order by change_id",
                    (["c-" + i for i in ids],))
        assert [r[0] for r in cur.fetchall()] == sorted("c-" + i for i in ids)


def test_the_previous_releases_call_still_answers():
    """A worker of the previous release, during a rolling upgrade, sends the documents as
    jsonb[] (the form before `guarded`): same answers and rows."""
    key, uid = new_officer()
    ids = [f"previous-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    with worker_db() as conn, conn.cursor() as cur:
        as_officer(cur, key, uid)
        cur.execute("select result::text from app.insert_documents(%s, %s, %s::text[], %s::text[], %s::text[], %s::jsonb[])"
                    " order by ord",
                    ("reports", "c-previous", ["c-" + i for i in ids], ids, ["agency=" + key, "agency=Gabon"],
                     [json.dumps(doc_for("reports", i)) for i in ids]))
        results = [json.loads(r[0]) for r in cur.fetchall()]
        conn.commit()
    assert statuses(results) == ["applied", "forbidden"]
    assert set(rows(ids)) == {ids[0]}


def test_the_opening_leaves_the_device_row_only_when_told():
    """`device_row => false` (a push within the minute of the device's last on the worker)
    opens the push without touching the device's row, in app.insert_documents' statement and
    in app.open_first_push's own; the previous release's calls (open_first_push's five
    arguments, insert_documents without `device_row`), during a rolling upgrade, still write
    it (repeatable/0005)."""
    key, uid = new_officer()
    p = "agency=" + key
    old_client, new_client, alone_client = ("dr-" + uuid.uuid4().hex for _ in range(3))
    ids = [f"dr-{uuid.uuid4().hex[:8]}" for _ in range(4)]
    insert = ("select result::text from app.insert_documents('reports', %s, %s::text[], %s::text[], %s::text[], %s::jsonb,"
              " guarded => false, first_push_app_version => %s{}) order by ord")
    with worker_db() as conn, conn.cursor() as cur:
        for client, i, version, extra in [(old_client, 0, "1.0", ""), (new_client, 1, "2.0", ", device_row => false")]:
            as_officer(cur, key, uid)
            cur.execute(insert.format(extra), (client, ["c-" + ids[i]], [ids[i]], [p], json.dumps([doc_for("reports", ids[i])]),
                                               version))
            assert statuses([json.loads(r[0]) for r in cur.fetchall()]) == ["applied"]
            conn.commit()
        for client, i, extra in [(old_client, 2, ""), (alone_client, 3, ", false")]:
            as_officer(cur, key, uid)
            cur.execute(f"select app.open_first_push(%s, '3.0', %s::text[], %s::text[], array['reports']{extra})",
                        (client, ["c-" + ids[i]], [p]))
            conn.commit()
    assert device_row(uid, old_client)[0] == "3.0"
    assert device_row(uid, new_client) is None and device_row(uid, alone_client) is None
    # Either way the push names its device for the history.
    assert {h[0]: h[3] for h in history(ids[:2])} == {ids[0]: old_client, ids[1]: new_client}


def device_row(uid, client_id):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select app_version, last_push, xmin::text from app.devices where user_id = %s and client_id = %s",
                    (uid, client_id))
        return cur.fetchone()


def test_both_ways_name_the_device_and_write_its_row():
    """A push in one round trip (new documents only: app.open_first_push writes the device's
    row and names the device for the history in the statement before its writes) and a push
    the usual way (an update: the reads first) record the same things: the device's row
    with its last push and app version, and the clientId as the history entry's device.
    Each push here carries a new app version, so each writes the row at once
    (Sync/DevicePushes.swift; within the minute the same version would not)."""
    key = new_agency()
    p = "agency=" + key
    me = Client(new_user("officer", key))
    client_id = uuid.uuid4().hex
    one, two = f"dev-{uuid.uuid4().hex[:8]}", f"dev-{uuid.uuid4().hex[:8]}"
    assert device_row(me.id, client_id) is None

    first = change("insert", "reports", p, one, doc_for("reports", one))
    r = me.post("/api/v1/sync/push", {"clientId": client_id, "appVersion": "7.1", "changes": [first]})
    assert r.status_code == 200 and statuses(r.json()["results"]) == ["applied"]
    version, first_push, first_xmin = device_row(me.id, client_id)
    assert version == "7.1" and first_push is not None
    assert history([one]) == [(one, 1, "insert", client_id)]

    # The usual way (an update needs the reads).
    r = me.post("/api/v1/sync/push", {"clientId": client_id, "appVersion": "7.2", "changes": [
        change("update", "reports", p, one, {"draft": False}),
        change("insert", "reports", p, two, doc_for("reports", two))]})
    assert r.status_code == 200 and statuses(r.json()["results"]) == ["applied", "applied"]
    version, second_push, second_xmin = device_row(me.id, client_id)
    assert version == "7.2" and second_push >= first_push and second_xmin != first_xmin
    # history() orders by report id, then entry: the two random ids in either order.
    expected = [(one, 1, "insert", client_id), (one, 2, "update", client_id), (two, 1, "insert", client_id)]
    assert history([one, two]) == sorted(expected, key=lambda h: h[0])

    # A retry of the first push: one round trip is tried, finds the push log, and the usual
    # way answers it; the device row is written once, by the usual way's statement.
    r = me.post("/api/v1/sync/push", {"clientId": client_id, "appVersion": "7.3", "changes": [first]})
    assert r.status_code == 200 and statuses(r.json()["results"]) == ["duplicate"]
    assert device_row(me.id, client_id)[0] == "7.3"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.devices where user_id = %s", (me.id,))
        assert cur.fetchone()[0] == 1


def test_the_device_row_is_written_once_a_minute_or_for_a_new_app_version():
    """A worker writes a device's row (last push, app version) when it has not within the
    minute, or when the push carries an app version the row was not last written with
    (Sync/DevicePushes.swift): the back office shows the last push to the minute. One
    kept-alive connection's pushes go to one worker (nginx `hash $connection`), so the
    second and third pushes here meet the first one's memory; the minute itself is
    DevicePushesTests'."""
    key = new_agency()
    p = "agency=" + key
    me = Client(new_user("officer", key))
    client_id = uuid.uuid4().hex
    ids = [f"dev-{uuid.uuid4().hex[:8]}" for _ in range(4)]

    def push(changes, app_version=None):
        body = {"clientId": client_id, "changes": changes}
        if app_version is not None:
            body["appVersion"] = app_version
        r = me.post("/api/v1/sync/push", body)
        assert r.status_code == 200 and statuses(r.json()["results"]) == ["applied"] * len(changes), r.text

    push([change("insert", "reports", p, ids[0], doc_for("reports", ids[0]))], "7.1")
    written = device_row(me.id, client_id)
    assert written[0] == "7.1" and written[1] is not None
    # Within the minute, the same version (in one round trip) or none (the usual way: an
    # update needs its reads): the row stays as it was, the writes go in.
    push([change("insert", "reports", p, ids[1], doc_for("reports", ids[1]))], "7.1")
    push([change("update", "reports", p, ids[0], {"draft": False}),
          change("insert", "reports", p, ids[2], doc_for("reports", ids[2]))])
    assert device_row(me.id, client_id) == written
    assert history(ids[:3]) == sorted([(ids[0], 1, "insert", client_id), (ids[0], 2, "update", client_id),
                                       (ids[1], 1, "insert", client_id), (ids[2], 1, "insert", client_id)])
    # A new app version is written at once.
    push([change("insert", "reports", p, ids[3], doc_for("reports", ids[3]))], "7.2")
    version, last_push, xmin = device_row(me.id, client_id)
    assert version == "7.2" and last_push > written[1] and xmin != written[2]


def test_the_device_row_is_only_ever_the_callers_own():
    """app.note_device_push runs as the table's owner, without row-level security
    (repeatable/0005): from the worker role it still writes only the caller's own row, never
    another user's (of the same client id, even a global admin's claims), and without claims
    it is refused as the policy refused it."""
    key, me = new_officer()
    _, other = new_officer()
    client_id = "shared-" + uuid.uuid4().hex
    with worker_db() as conn, conn.cursor() as cur:
        as_officer(cur, key, other)
        cur.execute("select app.note_device_push(%s, '1.0')", (client_id,))
        conn.commit()
    others = device_row(other, client_id)
    with worker_db() as conn, conn.cursor() as cur:
        as_officer(cur, key, me)
        cur.execute("select app.note_device_push(%s, '2.0')", (client_id,))
        cur.execute("select app.note_device_push(%s, '')", (client_id,))
        conn.commit()
        cur.execute("select set_config('tideway.role', 'globalAdmin', true), set_config('tideway.user_id', %s, true)", (me,))
        cur.execute("select app.note_device_push(%s, '3.0')", (client_id,))
        conn.commit()
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute("select app.note_device_push(%s, '4.0')", ("nobody-" + uuid.uuid4().hex,))
        conn.rollback()
    assert device_row(me, client_id)[0] == "3.0"
    assert device_row(other, client_id) == others
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.devices where client_id like 'nobody-%%' and user_id is null")
        assert cur.fetchone()[0] == 0
