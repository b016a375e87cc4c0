"""The dashboards' daily summaries (Migrations/0051) are folded from the reports' changes
in batches, off the write path (0087: by the job runner every half second, here by
`fold_summaries` at once): after any mix of writes through the sync API — inserts, edits
that change a summarized fact and edits that change none, a date moved to another day, a
draft made final and back, a location moved off the edge of the bounds, deletes,
concurrent pushes, compaction, a mass deletion, a writer still uncommitted while a fold
runs — a fold leaves the tables holding exactly what the *_computed views compute from the
reports themselves, and the write itself changes no summary."""
import random
import signal
import subprocess
import threading
import time
import uuid

import psycopg2
import psycopg2.extras
import pytest

from conftest import ADMIN_DB, admin_db, fold_summaries, new_user, worker_db
from patrol_support import TIDEWAY, runner_backends, stack_runner_paused, tool_env, wait_for  # noqa: F401 (a fixture)
from synclib import Client, change, new_agency
from test_dashboards import insert_report, report_doc

TABLES = ("boarding_days", "officer_days", "tally_days")


def drift(partition, fold=True):
    """Rows where a summary and its recomputation differ (zero rows left by removals are
    allowed: they count nothing), after folding the partition's changes (unless told not to)."""
    if fold:
        fold_summaries(partition)
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
    # The write itself counts nothing: the fold does (a fold already under way may have
    # taken some: either none or all five, the push being one transaction).
    assert summary_total(p) in (0, 5)
    assert drift(p) == {}
    assert summary_total(p) == 5
    assert fold_summaries(p) == 0  # folded once only

    # An edit that changes no summarized fact (a fold finds it counts as before) and edits that do.
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
    # Changes no fold saw before their rows went: a report pushed, deleted (a tombstone)
    # and compacted away; another pushed and removed by hand; a third removed and pushed
    # again under its id. None was folded in between.
    extra = [f"sum-{uuid.uuid4().hex[:10]}" for _ in range(3)]
    push_ok(client, [change("insert", "reports", p, x, report(x, me, "2026-01-05T10:00:00Z", "Amber", [("Warning", "V5")],
                                                               [("Tuna", 3, "kg")], (9.8, 0.9))) for x in extra])
    assert drift(p) == {} and summary_total(p) == 6
    push_ok(client, [change("delete", "reports", p, extra[0]),
                     change("update", "reports", p, extra[2], {"location": [9.85, 0.95]})])
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("delete from sync.reports where partition = %s and deleted", (p,))
        cur.execute("delete from sync.reports where id = any(%s)", ([extra[1], extra[2]],))
    push_ok(client, [change("insert", "reports", p, extra[2], report(extra[2], me, "2026-01-06T10:00:00Z", "Green"))])
    assert drift(p) == {} and summary_total(p) == 4
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.boarding_removals where partition = %s", (p,))
        assert cur.fetchone()[0] == 0


def test_a_fold_while_a_writer_is_uncommitted_counts_its_change_once_it_commits(agency):
    """A partition's changes are numbered by its clock, whose row the writer holds until it
    commits: a fold meanwhile must neither wait for the writer nor move its watermark past
    the writer's number, or that change would never be counted."""
    key, p, client = agency
    first, late = f"ooo-{uuid.uuid4().hex[:10]}", f"ooo-{uuid.uuid4().hex[:10]}"
    push_ok(client, [change("insert", "reports", p, first, report(first, client.email, "2026-01-05T10:00:00Z"))])
    assert drift(p) == {} and summary_total(p) == 1
    writer = psycopg2.connect(ADMIN_DB)
    try:
        with writer.cursor() as cur:  # one open transaction: the clock row stays locked
            cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s)) returning seq",
                        (late, p, psycopg2.extras.Json(report(late, client.email, "2026-01-06T10:00:00Z", "Red")), p))
            late_seq = cur.fetchone()[0]
        # Meanwhile a change of another partition commits, and folds of every partition run.
        other_key = new_agency()
        other, other_client, oid = "agency=" + other_key, Client(new_user("officer", other_key)), f"ooo-{uuid.uuid4().hex[:10]}"
        push_ok(other_client, [change("insert", "reports", other, oid, report(oid, other_client.email, "2026-01-05T10:00:00Z"))])
        fold_summaries()
        fold_summaries(p)
        assert drift(other, fold=False) == {} and summary_total(other) == 1
        assert summary_total(p) == 1
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select seq from app.summary_watermarks where partition = %s", (p,))
            assert cur.fetchone()[0] < late_seq
        writer.commit()
    finally:
        writer.close()
    assert drift(p) == {} and summary_total(p) == 2  # counted by the next fold ...
    assert fold_summaries(p) == 0 and summary_total(p) == 2  # ... and once


def test_the_job_runner_folds_the_changes_without_being_asked(agency):
    """The stack's job runner (`tideway jobs`) folds every half second; waits up to 30 s."""
    key, p, client = agency
    rid = f"run-{uuid.uuid4().hex[:10]}"
    push_ok(client, [change("insert", "reports", p, rid, report(rid, client.email, "2026-01-05T10:00:00Z"))])
    deadline = time.monotonic() + 30
    while summary_total(p) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert summary_total(p) == 1
    assert drift(p, fold=False) == {}


def kill_a_runner_folding_up_to(held, writes):
    """Holds the watermark of the partition `held`, runs `writes()`, starts a runner of the
    test's own (`tideway jobs`) and kills it (SIGKILL) once its fold waits for that
    watermark, every partition before it folded in the same transaction; returns once the
    killed runner's backend is gone."""
    holder = psycopg2.connect(ADMIN_DB)
    runner = None
    try:
        with holder.cursor() as cur:  # the held partition's fold will wait for this
            cur.execute("select seq from app.summary_watermarks where partition = %s for update", (held,))
        writes()
        runner = subprocess.Popen([TIDEWAY, "jobs"], env=tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        waiting = lambda: [pid for pid, (query, wait) in runner_backends(runner.pid).items()
                           if "fold_boarding_summaries" in (query or "") and wait == "Lock"]
        assert wait_for(waiting, timeout=30)
        fold_backend = waiting()[0]
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    finally:
        if runner and runner.poll() is None:
            runner.kill()
        holder.rollback()
        holder.close()

    def gone():
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select count(*) from pg_stat_activity where pid = %s", (fold_backend,))
            return cur.fetchone()[0] == 0
    assert wait_for(gone, timeout=30)


def test_a_runner_killed_mid_fold_loses_nothing_and_counts_nothing_twice(stack_runner_paused):
    """`tideway jobs` killed in the middle of a fold (one partition folded, the next waiting
    for its watermark) commits nothing of it: its COMMIT is sent only after the fold's
    statement answers. The next fold then counts every change once."""
    first, second = sorted("agency=" + new_agency() for _ in range(2))  # folded in this order
    clients = {p: Client(new_user("officer", p[len("agency="):])) for p in (first, second)}
    ids = {p: [f"kill-{uuid.uuid4().hex[:10]}" for _ in range(2)] for p in (first, second)}
    push_ok(clients[second], [change("insert", "reports", second, ids[second][0],
                                     report(ids[second][0], clients[second].email, "2026-01-05T10:00:00Z"))])
    fold_summaries(second)

    def writes():
        for p, rid in ((first, ids[first][0]), (first, ids[first][1]), (second, ids[second][1])):
            push_ok(clients[p], [change("insert", "reports", p, rid, report(rid, clients[p].email, "2026-01-06T10:00:00Z"))])
    kill_a_runner_folding_up_to(second, writes)
    # The first partition's fold went with the killed runner's transaction.
    assert summary_total(first) == 0 and summary_total(second) == 1
    assert drift(first) == {} and drift(second) == {}
    assert summary_total(first) == 2 and summary_total(second) == 2
    assert fold_summaries(first) == 0 and fold_summaries(second) == 0
    assert summary_total(first) == 2 and summary_total(second) == 2


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
    fold_summaries(p)
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


def mass_of_reports(partition, officer, count):
    """`count` boardings written straight to the table (as an import would): half copies of
    one boarding (one day, one place: every removal of one is on its day's bounds, the case
    that cost seconds a fold), half spread over ten days and a square degree."""
    rng = random.Random(partition)
    ids = []
    with admin_db() as conn, conn.cursor() as cur:
        for i in range(count):
            if i % 2:
                ids.append(insert_report(cur, partition, officer, "2026-04-01T08:00:00Z", [("Warning", "V1")], "Amber",
                                         [("Tuna", 10, "kg")], (9.5, -0.5)))
            else:
                ids.append(insert_report(cur, partition, officer, f"2026-04-{rng.randint(2, 11):02d}T12:00:00Z",
                                         [("Citation", f"V{rng.randint(1, 4)}")] if rng.random() < 0.5 else [],
                                         rng.choice(["Green", "Amber", "Red"]), [("Cod", rng.randint(1, 50), "kg")],
                                         (9 + rng.random(), -rng.random())))
    return ids


def pending_removals(partition):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.boarding_removals where partition = %s", (partition,))
        return cur.fetchone()[0]


def test_a_mass_deletion_mixed_with_inserts_and_edits_keeps_the_summaries_exact(agency):
    """Hundreds of reports removed at once and in statements of 25 (as an operator's clean-up
    or a retention job would), while reports are pushed and edited through the sync API: one
    fold later the summaries equal their recount from the reports, bounds included."""
    key, p, client = agency
    me = client.email
    ids = mass_of_reports(p, me, 400)
    assert drift(p) == {} and summary_total(p) == 400
    rng = random.Random(22)
    gone = rng.sample(ids, 300)
    pushed = [f"mass-{uuid.uuid4().hex[:10]}" for _ in range(4)]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("delete from sync.reports where id = any(%s)", (gone[:150],))
    push_ok(client, [change("insert", "reports", p, x, report(x, me, "2026-04-01T09:00:00Z", "Amber", [("Warning", "V1")],
                                                               [("Tuna", 2, "kg")], (9.5, -0.5))) for x in pushed[:2]])
    kept = [x for x in ids if x not in gone]
    push_ok(client, [change("update", "reports", p, kept[0], {"location": [9.99, -0.01]}),
                     change("update", "reports", p, kept[1], {"draft": True}),
                     change("delete", "reports", p, kept[2])])
    with admin_db() as conn, conn.cursor() as cur:
        for i in range(150, 300, 25):
            cur.execute("delete from sync.reports where id = any(%s)", (gone[i:i + 25],))
            conn.commit()
    push_ok(client, [change("insert", "reports", p, x, report(x, me, "2026-04-03T09:00:00Z", "Green")) for x in pushed[2:]])
    # A removed id pushed again: it counts once, as the new report.
    push_ok(client, [change("insert", "reports", p, gone[0], report(gone[0], me, "2026-04-05T09:00:00Z", "Red"))])
    assert drift(p) == {}
    assert summary_total(p) == 400 - 300 - 2 + 4 + 1
    assert pending_removals(p) == 0
    assert fold_summaries(p) == 0


def test_a_runner_killed_mid_fold_during_a_mass_deletion_commits_none_of_it(stack_runner_paused):
    """As the test above it, the first partition's fold taking away hundreds of removals:
    killed while the next partition's fold waits, its backend commits nothing (the removals
    stay noted, the summaries count the removed reports still); the next fold is exact."""
    first, second = sorted("agency=" + new_agency() for _ in range(2))
    officer = new_user("officer", first[len("agency="):])
    ids = mass_of_reports(first, officer, 300)
    second_client = Client(new_user("officer", second[len("agency="):]))
    sid = f"kill-{uuid.uuid4().hex[:10]}"
    push_ok(second_client, [change("insert", "reports", second, sid, report(sid, second_client.email, "2026-01-05T10:00:00Z"))])
    assert drift(first) == {} and drift(second) == {}
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("delete from sync.reports where id = any(%s)", (ids[:250],))

    def writes():
        sid2 = f"kill-{uuid.uuid4().hex[:10]}"
        push_ok(second_client, [change("insert", "reports", second, sid2, report(sid2, second_client.email, "2026-01-06T10:00:00Z"))])
    kill_a_runner_folding_up_to(second, writes)
    assert summary_total(first) == 300 and pending_removals(first) == 250
    assert drift(first) == {} and drift(second) == {}
    assert summary_total(first) == 50 and summary_total(second) == 2 and pending_removals(first) == 0
    assert fold_summaries(first) == 0 and fold_summaries(second) == 0


def test_the_runners_idle_check_sees_a_write_and_a_removal_until_they_are_folded(stack_runner_paused, agency):
    """The job runner's turn with nothing to do is one statement, app.job_runner_work(): it
    must say a fold is due whenever one would find work, or the dashboards would lag."""
    key, p, client = agency

    def fold_due():
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select fold_due from app.job_runner_work()")
            return cur.fetchone()[0]
    fold_summaries()
    assert fold_due() is False
    rid = f"idle-{uuid.uuid4().hex[:10]}"
    push_ok(client, [change("insert", "reports", p, rid, report(rid, client.email, "2026-01-05T10:00:00Z"))])
    assert fold_due() is True
    fold_summaries()
    assert fold_due() is False
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("delete from sync.reports where id = %s", (rid,))
    assert fold_due() is True
    fold_summaries()
    assert fold_due() is False and summary_total(p) == 0
