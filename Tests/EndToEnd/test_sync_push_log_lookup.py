"""A push's look-up of its earlier outcomes (app.logged_outcomes, Migrations/repeatable/0005_write_path.sql)
probes the push log's whole key whoever's claims its plan was made under: a worker's connection
keeps one generic plan for every caller, and the one made under the warm-up's made-up officer
filtered a device's change ids out of all its logged outcomes instead, until autovacuum's
ANALYZE (docs/performance/round-15.md, "A push's first 40 s: the push log read by key").

The plans are read from PostgreSQL's auto_explain, sent to this session as notices."""
import re
import uuid

from conftest import admin_db
from test_sync_batch_inserts import as_officer, new_officer

LOGGED = 3000  # outcomes of one device: enough that its caller's rows are most of the statistics


def push_log_scans(notices):
    """The push log's scan nodes with their conditions, from the auto_explain notices."""
    scans = []
    for notice in notices:
        for node in re.split(r"\n\s*->", notice):
            if "on push_log" in node:
                scans.append(node)
    return scans


def test_the_push_log_is_read_by_its_whole_key_whoever_planned_it():
    key, heavy = new_officer()
    client = "dev-" + uuid.uuid4().hex[:8]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("insert into app.push_log (user_id, client_id, change_id, result)"
                    " select %s, %s, 'c' || i, '{}' from generate_series(1, %s) i", (heavy, client, LOGGED))
        cur.execute("analyze app.push_log")
    conn = admin_db()
    conn.autocommit = False
    try:
        with conn.cursor() as cur:
            cur.execute("load 'auto_explain'")
            cur.execute("set auto_explain.log_min_duration = 0; set auto_explain.log_nested_statements = on;"
                        " set auto_explain.log_level = notice; set auto_explain.log_analyze = on")
            cur.execute("set role tideway_worker")
            # First planned under the claims of an officer with nothing logged (the warm-up's
            # made-up one), then run for the device with thousands: the same cached plan.
            as_officer(cur, "warm-up-" + uuid.uuid4().hex[:8], str(uuid.uuid4()))
            cur.execute("select app.expect_first_push(%s, array['new-1'], '{}', '{}')", (client,))
            as_officer(cur, key, heavy)
            del conn.notices[:]
            cur.execute("select app.expect_first_push(%s, array['new-2'], '{}', '{}')", (client,))
            scans = push_log_scans(conn.notices)
            # A retry still finds its outcome through the same plan.
            cur.execute("select change_id from app.logged_outcomes(%s, array['c7', 'new-3'])", (client,))
            assert cur.fetchall() == [("c7",)]
        conn.rollback()
    finally:
        conn.close()
    assert scans, "auto_explain showed no scan of app.push_log"
    for scan in scans:
        assert re.search(r"Index Cond: \(.*change_id = ", scan), scan
        assert "Rows Removed by Filter" not in scan, scan
