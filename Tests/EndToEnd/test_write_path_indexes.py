"""The indexes a push writes serve their readers (Migrations/0115_write_path_indexes_with_readers.sql,
0116_push_log_refusals_by_device.sql; docs/performance/round-21.md, "The indexes a report's push
writes, and their readers" and "The sync inspector's device list"): the push log's indexes hold
refused changes only and are what the sync inspector reads, its list of them and each device's
count of them (their condition, Administration/SyncInspector.swift, is the indexes' predicate); a
report's history is read through its chain alone, under row-level security as the worker."""
import uuid

from admin_support import menu_doc
from conftest import claim, new_user
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
    claim(cur, admin, "agencyAdmin", "Gabon")
    timeline = "select h.seq from app.report_history h where h.report_id = %s order by h.id desc limit 200"
    cur.execute("explain (format json) " + timeline, (report,))
    assert scanned_indexes(cur.fetchone()[0][0]["Plan"]) == ["report_history_chain"]
    cur.execute(timeline, (report,))
    assert [row[0] for row in cur.fetchall()] == list(range(APPLIED, 0, -1000))


def test_a_devices_refusals_are_counted_from_its_refusals_alone(rolled_back_cursor):
    """The device list's count (SyncInspector.show's `rejections`) for a device with many
    accepted changes: read from push_log_rejected_by_device, under a global admin's claims as
    the worker, and only the refusals of the last 7 days counted."""
    cur = rolled_back_cursor
    cur.execute("select id::text from app.users where role = 'officer' order by email limit 1")
    officer = cur.fetchone()[0]
    device = "counted-" + uuid.uuid4().hex[:8]
    # The device's accepted changes, three refusals of this week and two older ones.
    cur.execute("insert into app.push_log (user_id, client_id, change_id, result, at)"
                " select %s, %s, 'c' || i,"
                "  case when i <= 5 then jsonb_build_object('status', 'rejected')"
                "       else jsonb_build_object('status', 'applied', 'seq', i) end,"
                "  now() - case when i in (4, 5) then interval '8 days' else interval '1 hour' end"
                " from generate_series(1, %s) i", (officer, device, APPLIED))
    # Other devices' refusals of this week: what the index of every refusal by time
    # (push_log_rejected_at) would have to filter. Without them a fresh stack's few refusals
    # make either refused index as cheap, and the planner's choice a coin's.
    cur.execute("insert into app.push_log (user_id, client_id, change_id, result, at)"
                " select %s, 'other-' || (i %% 50), 'c' || i, jsonb_build_object('status', 'rejected'),"
                "  now() - interval '2 hours'"
                " from generate_series(1, %s) i", (officer, APPLIED // 2))
    cur.execute("analyze app.push_log")
    cur.execute("select id::text from app.users where role = 'globalAdmin' order by email limit 1")
    admin = cur.fetchone()[0]
    cur.execute("set local role tideway_worker")
    claim(cur, admin, "globalAdmin")
    count = ("select count(*) from app.push_log l where l.user_id = %s and l.client_id = %s"
             " and l.result->>'status' = 'rejected' and l.at > now() - interval '7 days'")
    cur.execute("explain (format json) " + count, (officer, device))
    # The other index a plan names is the policy's look-up of an agency's users (users_agency),
    # which a global admin's claims never run.
    used = scanned_indexes(cur.fetchone()[0][0]["Plan"])
    assert [name for name in used if name.startswith("push_log")] == ["push_log_rejected_by_device"]
    cur.execute(count, (officer, device))
    assert cur.fetchone()[0] == 3
