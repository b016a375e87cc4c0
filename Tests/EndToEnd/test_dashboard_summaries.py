"""The dashboards' daily summaries (Migrations/0051) are kept by the write path: after any
mix of writes through the sync API — inserts, edits that change a summarized fact and
edits that change none, a date moved to another day, a draft made final and back, a
location moved off the edge of the bounds, deletes, concurrent pushes, compaction — the
tables hold exactly what the *_computed views compute from the reports themselves."""
import random
import threading
import uuid

import psycopg2
import pytest

from conftest import admin_db, new_user, worker_db
from synclib import Client, change, new_agency
from test_dashboards import report_doc

TABLES = ("boarding_days", "officer_days", "tally_days")


def drift(partition):
    """Rows where a summary and its recomputation differ (zero rows left by removals are
    allowed: they count nothing)."""
    found = {}
    with admin_db() as conn, conn.cursor() as cur:
        for table in TABLES:
            measure = "entries" if table == "tally_days" else "boardings"
            cur.execute(f"""
                (select 'kept' as side, * from app.{table} where partition = %(p)s and {measure} <> 0
                 except select 'kept', * from app.{table}_computed where partition = %(p)s)
                union all
                (select 'computed', * from app.{table}_computed where partition = %(p)s
                 except select 'computed', * from app.{table} where partition = %(p)s)""", {"p": partition})
            rows = cur.fetchall()
            if rows:
                found[table] = rows
    return found


def summary_total(partition):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select coalesce(sum(boardings), 0) from app.boarding_days where partition = %s", (partition,))
        return cur.fetchone()[0]


def report(rid, officer, date, level="Green", violations=(), catch=(), location=(9.2, -0.6), draft=False):
    return report_doc(rid, officer, date, violations, level, catch, location, draft)


@pytest.fixture
def agency():
    key = new_agency()
    officer = new_user("officer", key)
    return key, "agency=" + key, Client(officer)


def push_ok(client, changes):
    results = client.push(changes)
    assert all(r["status"] == "applied" for r in results), results


def test_every_kind_of_write_keeps_the_summaries_exact(agency):
    key, p, client = agency
    me = client.email
    ids = [f"sum-{uuid.uuid4().hex[:10]}" for _ in range(6)]
    push_ok(client, [
        change("insert", "reports", p, ids[0], report(ids[0], me, "2026-01-05T10:00:00Z", "Green", [("Warning", "V1")],
                                                      [("Tuna", 100, "kg")], (9.1, -0.5))),
        change("insert", "reports", p, ids[1], report(ids[1], me, "2026-01-05T22:30:00-03:00", "Red",
                                                      [("Citation", "V2"), ("Warning", "V1")], [("Tuna", 220.462, "lbs")],
                                                      (9.3, -0.7))),
        change("insert", "reports", p, ids[2], report(ids[2], "Other@Test.Tideway", "2026-01-05T12:00:00Z", "Amber",
                                                      [("", "V3")], [("Shark", 50, "kg"), ("Tuna", 0, "kg")], (9.9, 0.4))),
        change("insert", "reports", p, ids[3], report(ids[3], me, "2026-02-10T12:00:00Z", draft=True)),
        change("insert", "reports", p, ids[4], report(ids[4], me, "2026-02-11T12:00:00Z", location=None)),
        change("insert", "reports", p, ids[5], {"_id": ids[5], "timestamp": "2026-02-12T00:00:00Z", "draft": False}),
    ])
    assert drift(p) == {}
    assert summary_total(p) == 5

    # An edit that changes no summarized fact (skipped by the trigger) and edits that do.
    push_ok(client, [change("update", "reports", p, ids[0], {"vessel": {"name": "Renamed"}})])
    assert drift(p) == {}
    push_ok(client, [
        change("update", "reports", p, ids[0], {"inspection": {"summary": {"violations": []}}}),
        change("update", "reports", p, ids[1], {"date": "2026-03-01T01:00:00Z", "timestamp": "2026-03-01T01:00:00Z"}),
        # The eastern- and northernmost boarding of its day moves away: the bounds shrink.
        change("update", "reports", p, ids[2], {"location": [9.15, -0.55]}),
        change("update", "reports", p, ids[3], {"draft": False}),
        change("update", "reports", p, ids[4], {"location": [9.0, -1.0], "reportingOfficer": {"email": "third@test.tideway"}}),
    ])
    assert drift(p) == {}
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select east, north from app.boarding_days where partition = %s and day = '2026-01-05' and safety_level = 'Amber'",
                    (p,))
        assert cur.fetchone() == (9.15, -0.55)

    assert summary_total(p) == 6
    # Back to draft, deleted, deleted twice (idempotent), re-created under the same id.
    push_ok(client, [change("update", "reports", p, ids[3], {"draft": True}),
                     change("delete", "reports", p, ids[1]),
                     change("delete", "reports", p, ids[2])])
    assert drift(p) == {}
    push_ok(client, [change("insert", "reports", p, ids[1], report(ids[1], me, "2026-01-05T10:00:00Z", "Red",
                                                                   [("Citation", "V7")], [("Cod", 1.5, "kg")]))])
    assert drift(p) == {}
    assert summary_total(p) == 4  # ids 0, 1 (again), 4 and 5
    # The compaction removes the tombstone of ids[2]; summaries stay exact.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("delete from sync.reports where partition = %s and deleted", (p,))
    assert drift(p) == {}
    # An operator removing a live report by hand: its boarding goes from the summaries too.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("delete from sync.reports where id = %s", (ids[0],))
    assert drift(p) == {} and summary_total(p) == 3


def test_concurrent_pushes_lose_no_update(agency):
    key, p, client = agency
    officers = [client] + [Client(new_user("officer", key)) for _ in range(3)]
    rng = random.Random(8)
    plans = []
    for c in officers:
        batches = []
        for _ in range(6):
            batch = []
            for _ in range(5):
                rid = f"con-{uuid.uuid4().hex[:10]}"
                day = f"2026-01-{rng.randint(1, 4):02d}T{rng.randint(0, 23):02d}:00:00Z"
                batch.append(change("insert", "reports", p, rid, report(
                    rid, c.email, day, rng.choice(["Green", "Amber", "Red"]),
                    [("Warning", f"V{rng.randint(1, 3)}")] if rng.random() < 0.5 else [],
                    [("Tuna", rng.randint(1, 90), "kg")], (9 + rng.random(), -rng.random()))))
            batches.append(batch)
        plans.append((c, batches))
    errors = []

    def run(c, batches):
        try:
            for batch in batches:
                push_ok(c, batch)
                # Every other batch edits a fact of one of its reports, then deletes another.
                push_ok(c, [change("update", "reports", p, batch[0]["id"], {"inspection": {"summary": {
                    "safetyLevel": {"level": "Red", "amberReason": ""}}}}),
                            change("delete", "reports", p, batch[1]["id"])])
        except Exception as e:  # reported below, with the thread's failure
            errors.append(e)

    threads = [threading.Thread(target=run, args=plan) for plan in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert drift(p) == {}
    assert summary_total(p) == 4 * 6 * 4


def test_summaries_are_read_under_row_level_security_and_written_by_no_worker(agency):
    key, p, client = agency
    rid = f"rls-{uuid.uuid4().hex[:10]}"
    push_ok(client, [change("insert", "reports", p, rid, report(rid, client.email, "2026-01-05T10:00:00Z"))])
    with worker_db() as conn, conn.cursor() as cur:
        # Claims of an admin of another agency: none of this agency's rows are visible.
        cur.execute("select set_config('tideway.role', 'agencyAdmin', true), set_config('tideway.agency', 'Gabon', true)")
        for table in TABLES:
            cur.execute(f"select count(*) from app.{table} where partition = %s", (p,))
            assert cur.fetchone()[0] == 0, table
        cur.execute("select set_config('tideway.agency', %s, true)", (key,))
        cur.execute("select count(*) from app.boarding_days where partition = %s", (p,))
        assert cur.fetchone()[0] == 1
        for statement in ("insert into app.boarding_days values (%s, '2026-01-01', 'Green', 1, 1, 0, 0, 0, null, null, null, null)",
                          "update app.boarding_days set boardings = 99 where partition = %s",
                          "delete from app.tally_days where partition = %s"):
            cur.execute("savepoint s")
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute(statement, (p,))
            cur.execute("rollback to savepoint s")
    assert summary_total(p) == 1
