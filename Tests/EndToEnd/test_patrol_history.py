"""Report history (domain.md, server effect 7): entries for every write, from every
device, in order, in a SHA-256 chain that `tideway verify-history` checks."""
import uuid

import psycopg2
import psycopg2.extras
import pytest

from conftest import admin_db, token, worker_db
from patrol_support import as_caller, push, push_one, tideway

REPORT = {"timestamp": "2026-03-01T10:00:00Z", "draft": True,
          "vessel": {"name": "Aurora", "homePort": "Libreville", "nationality": "Gabon", "permitNumber": "G-1"}}


def history(report_id):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("""select id, op, device, user_id::text, change, prev_hash, hash, version, partition
                         from app.report_history where report_id = %s order by id""", (report_id,))
        return cur.fetchall()


def user_id(email):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id::text from app.users where lower(email) = lower(%s)", (email,))
        return cur.fetchone()[0]


@pytest.fixture(scope="module")
def officers():
    return {e: token(e) for e in ["gabon.officer1@demo.tideway", "gabon.officer2@demo.tideway"]}


def test_a_report_edited_from_two_devices_has_both_entries_in_order(officers):
    (first, t1), (second, t2) = officers.items()
    rid = str(uuid.uuid4())
    assert push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="insert",
                    doc=REPORT)["status"] == "applied"
    assert push_one(t2, "phone-B", collection="reports", partition="agency=Gabon", id=rid, op="update",
                    patch={"draft": False, "vessel": {"name": "Aurora II"}})["status"] == "applied"
    assert push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="delete")["status"] == "applied"

    entries = history(rid)
    assert [(e[1], e[2], e[3], e[7]) for e in entries] == [
        ("insert", "tablet-A", user_id(first), 1),
        ("update", "phone-B", user_id(second), 2),
        ("delete", "tablet-A", user_id(first), 3),
    ]
    assert entries[0][4] == {**REPORT, "_id": rid}
    # The update keeps what changed only, as a merge patch.
    assert entries[1][4] == {"draft": False, "vessel": {"name": "Aurora II"}}
    assert entries[2][4] is None
    assert entries[0][5] == "" and entries[1][5] == entries[0][6] and entries[2][5] == entries[1][6]
    assert all(e[8] == "agency=Gabon" for e in entries)


def test_a_whole_document_insert_of_an_existing_report_is_recorded_as_its_diff(officers):
    t1 = next(iter(officers.values()))
    rid = str(uuid.uuid4())
    push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="insert", doc=REPORT)
    replay = {**REPORT, "draft": False}
    del replay["vessel"]
    push_one(t1, "tablet-C", collection="reports", partition="agency=Gabon", id=rid, op="insert", doc=replay)
    entries = history(rid)
    assert [e[1] for e in entries] == ["insert", "update"]
    assert entries[1][4] == {"draft": False, "vessel": None}


def test_a_push_of_new_reports_writes_one_entry_each_and_goes_on_from_an_earlier_chain(officers):
    """A push of new reports is one INSERT with one statement trigger (repeatable/0020): each
    report still gets its own entry, numbered by its own clock value, and a report id that
    has history already (deleted by hand, pushed again) links to its last entry."""
    t1 = next(iter(officers.values()))
    back = str(uuid.uuid4())
    push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=back, op="insert", doc=REPORT)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("delete from sync.reports where id = %s", (back,))
    ids = [str(uuid.uuid4()) for _ in range(24)] + [back]
    results = push(t1, [{"collection": "reports", "partition": "agency=Gabon", "id": i, "op": "insert",
                         "doc": {**REPORT, "vessel": {**REPORT["vessel"], "name": f"Aurora {n}"}}}
                        for n, i in enumerate(ids)], "tablet-B")
    assert [r["status"] for r in results] == ["applied"] * 25
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("""select r.id, r.seq, h.seq, h.version, h.op, h.device, h.change #>> '{vessel,name}', h.prev_hash
                         from sync.reports r join app.report_history h on h.report_id = r.id and h.seq = r.seq
                        where r.id = any(%s) order by r.seq""", (ids,))
        entries = cur.fetchall()
    assert [e[0] for e in entries] == ids  # numbered in the push's order
    assert all(e[1] == e[2] and e[3] == 1 and e[4] == "insert" and e[5] == "tablet-B" for e in entries)
    assert [e[6] for e in entries] == [f"Aurora {n}" for n in range(25)]
    assert len({e[1] for e in entries}) == 25
    assert all(e[7] == "" for e in entries[:24])
    first, again = history(back)
    assert again[5] == first[6] != ""  # the chain goes on
    assert tideway("verify-history").returncode == 0


def test_verify_history_finds_a_tampered_row_and_names_it(officers):
    t1 = next(iter(officers.values()))
    rid = str(uuid.uuid4())
    push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="insert", doc=REPORT)
    push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="update", patch={"draft": False})
    assert tideway("verify-history").returncode == 0

    entry_id, original = history(rid)[0][0], history(rid)[0][4]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.report_history set change = jsonb_set(change, '{draft}', 'false') where id = %s", (entry_id,))
    try:
        out = tideway("verify-history", check=False)
        assert out.returncode != 0
        assert f"report {rid}: entry {entry_id}:" in out.stdout
        assert "altered" in out.stdout
    finally:
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("update app.report_history set change = %s where id = %s", (psycopg2.extras.Json(original), entry_id))
    assert tideway("verify-history").returncode == 0


def test_verify_history_finds_a_removed_entry(officers):
    t1 = next(iter(officers.values()))
    rid = str(uuid.uuid4())
    push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="insert", doc=REPORT)
    push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="update", patch={"draft": False})
    push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="update", patch={"draft": True})
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("""delete from app.report_history where id = (select id from app.report_history
                        where report_id = %s order by id offset 1 limit 1)
                       returning id, report_id, partition, seq, version, user_id, device, at, op, change, prev_hash, hash""", (rid,))
        removed = cur.fetchone()
    try:
        out = tideway("verify-history", check=False)
        assert out.returncode != 0
        assert f"report {rid}: entry {history(rid)[1][0]}:" in out.stdout
    finally:
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("""insert into app.report_history (id, report_id, partition, seq, version, user_id, device, at, op,
                             change, prev_hash, hash) values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
                        (*removed[:9], psycopg2.extras.Json(removed[9]), *removed[10:]))
    assert tideway("verify-history").returncode == 0


def test_history_is_readable_with_the_partition_and_never_writable_by_the_worker(officers):
    t1 = next(iter(officers.values()))
    rid = str(uuid.uuid4())
    push_one(t1, "tablet-A", collection="reports", partition="agency=Gabon", id=rid, op="insert", doc=REPORT)
    other = token("wildaid.officer1@demo.tideway")
    with worker_db() as conn:
        cur = as_caller(conn, t1)
        cur.execute("select count(*) from app.report_history where report_id = %s", (rid,))
        assert cur.fetchone()[0] == 1
        conn.rollback()
        cur = as_caller(conn, other)
        cur.execute("select count(*) from app.report_history where report_id = %s", (rid,))
        assert cur.fetchone()[0] == 0
        conn.rollback()
        for statement in ["update app.report_history set device = 'x' where report_id = %s",
                          "delete from app.report_history where report_id = %s",
                          "insert into app.report_history (report_id, partition, seq, version, device, at, op, prev_hash, hash)"
                          " values (%s, 'agency=Gabon', 1, 1, 'x', now(), 'insert', '', '')"]:
            cur = as_caller(conn, t1)
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute(statement, (rid,))
            conn.rollback()
