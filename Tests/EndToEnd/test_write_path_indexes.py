"""The indexes a push writes serve their readers (Migrations/0115_write_path_indexes_with_readers.sql,
docs/performance/round-21-indexes.md, "The indexes a report's push writes, and their readers"):
the push log's index holds refused changes only and is what the sync inspector's list of
them reads (its condition, Administration/SyncInspector.swift, is the index's predicate); a
report's history is read through its chain alone, under row-level security as the worker."""
import uuid

from admin_support import menu_doc
from conftest import new_user
from synclib import Client

APPLIED = 20_000  # accepted changes in the log: enough that a scan of them would show


def scanned_indexes(plan):
    found = [plan["Index Name"]] if "Index Name" in plan else []
    return found + [name for child in plan.get("Plans", []) for name in scanned_indexes(child)]


def test_the_refused_changes_are_read_from_an_index_of_their_own(rolled_back_cursor):
    cur = rolled_back_cursor
    client_id = "refused-" + uuid.uuid4().hex[:8]
    results = Client(new_user(agency="Gabon")).push([
        {"changeId": "c1", "collection": "menuData", "partition": "agency=Gabon", "id": menu_doc("Gabon")[0],
         "op": "update", "patch": {"ports": ["Officer port"]}}], client_id=client_id)
    assert results[0]["status"] == "rejected"
    cur.execute("insert into app.push_log (user_id, client_id, change_id, result)"
                " select gen_random_uuid(), 'applied', 'c' || i, jsonb_build_object('status', 'applied', 'seq', i)"
                " from generate_series(1, %s) i", (APPLIED,))
    cur.execute("analyze app.push_log")
    cur.execute("select indexdef from pg_indexes where indexname = 'push_log_rejected_at'")
    assert "WHERE ((result ->> 'status'::text) = 'rejected'::text)" in cur.fetchone()[0]
    refused = ("select l.client_id from app.push_log l where l.result->>'status' = 'rejected'"
               " order by l.at desc limit 100")
    cur.execute("explain (format json) " + refused)
    assert scanned_indexes(cur.fetchone()[0][0]["Plan"]) == ["push_log_rejected_at"]
    cur.execute(refused)
    assert (client_id,) in cur.fetchall()


def test_a_reports_history_is_read_through_its_chain_alone(rolled_back_cursor):
    cur = rolled_back_cursor
    cur.execute("select indexname from pg_indexes where schemaname = 'app' and tablename = 'report_history'"
                " order by indexname")
    assert [row[0] for row in cur.fetchall()] == ["report_history_chain", "report_history_pkey"]
    admin_email = new_user(role="agencyAdmin", agency="Gabon")
    report = "chain-" + uuid.uuid4().hex[:8]
    # Entries of many reports of the agency, as after a season of pushes: a partition test
    # that an index answered would have thousands of rows to combine with the report's own.
    cur.execute("insert into app.report_history (report_id, partition, seq, version, device, at, op, prev_hash, hash)"
                " select case when i %% 1000 = 0 then %s else 'other-' || i end, 'agency=Gabon', i, 1, 'test',"
                " now(), 'insert', '', md5(i::text) from generate_series(1, %s) i", (report, APPLIED))
    cur.execute("analyze app.report_history")
    cur.execute("select id::text from app.users where email = %s", (admin_email,))
    admin = cur.fetchone()[0]
    cur.execute("set local role tideway_worker")
    cur.execute("select set_config('tideway.user_id', %s, true), set_config('tideway.role', 'agencyAdmin', true),"
                " set_config('tideway.agency', 'Gabon', true)", (admin,))
    timeline = "select h.seq from app.report_history h where h.report_id = %s order by h.id desc limit 200"
    cur.execute("explain (format json) " + timeline, (report,))
    assert scanned_indexes(cur.fetchone()[0][0]["Plan"]) == ["report_history_chain"]
    cur.execute(timeline, (report,))
    assert [row[0] for row in cur.fetchall()] == list(range(APPLIED, 0, -1000))
