"""Row-level security is what keeps agencies apart, not application code: hand-written SQL
as the workers' own role, with claims set by hand the way app.authenticate sets them."""
import uuid

import psycopg2
import psycopg2.errors
import pytest

from conftest import admin_db, claim, worker_db

OFFICER = "gabon.officer1@demo.tideway"


@pytest.fixture(scope="module")
def gabon_officer():
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id::text, role, agency from app.users where email = %s", (OFFICER,))
        return cur.fetchone()


@pytest.fixture(scope="module")
def report_counts():
    """Reports per partition, as the superuser sees them (no RLS)."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select partition, count(*) from sync.reports group by partition")
        counts = dict(cur.fetchall())
    assert counts.get("agency=Gabon", 0) > 0 and sum(n for p, n in counts.items() if p != "agency=Gabon") > 0, (
        "the demo data should hold reports of Gabon and of other agencies")
    return counts


@pytest.fixture
def as_worker():
    """A worker-role connection in a transaction that is rolled back afterwards."""
    conn = worker_db()
    try:
        with conn.cursor() as cur:
            cur.execute("select current_user, (select rolbypassrls from pg_roles where rolname = current_user)")
            assert cur.fetchone() == ("tideway_worker", False)
        yield conn
    finally:
        conn.rollback()
        conn.close()


def test_hand_written_select_sees_only_the_callers_agency(as_worker, gabon_officer, report_counts):
    with as_worker.cursor() as cur:
        claim(cur, *gabon_officer)
        # Control: the claims work, the officer sees their own agency's reports.
        cur.execute("select count(*) from sync.reports where partition = 'agency=Gabon'")
        assert cur.fetchone()[0] == report_counts["agency=Gabon"]
        # Another agency's rows, asked for by name, by negation and by everything at once.
        cur.execute("select count(*) from sync.reports where partition = 'agency=WildAid'")
        assert cur.fetchone()[0] == 0
        cur.execute("select id from sync.reports where partition <> 'agency=Gabon'")
        assert cur.fetchall() == []
        cur.execute("select distinct partition from sync.reports")
        assert cur.fetchall() == [("agency=Gabon",)]
        # Not even by primary key.
        with admin_db() as admin, admin.cursor() as acur:
            acur.execute("select id from sync.reports where partition = 'agency=WildAid' limit 1")
            foreign_id = acur.fetchone()[0]
        cur.execute("select doc from sync.reports where id = %s", (foreign_id,))
        assert cur.fetchall() == []
        # Nor the other agency's users.
        cur.execute("select count(*) from app.users where agency is distinct from 'Gabon' and email <> %s", (OFFICER,))
        assert cur.fetchone()[0] == 0


def test_insert_into_another_agencys_partition_is_refused(as_worker, gabon_officer):
    doc_id = "rls-" + uuid.uuid4().hex
    with as_worker.cursor() as cur:
        claim(cur, *gabon_officer)
        cur.execute("savepoint before_insert")
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, 'agency=WildAid', '{}', 1)",
                        (doc_id,))
        cur.execute("rollback to savepoint before_insert")
        # Control: the same insert into the officer's own partition passes the policy.
        cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, 'agency=Gabon', '{}', 1)",
                    (doc_id,))
        # Moving a row of one's own agency into another is refused as well.
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute("update sync.reports set partition = 'agency=WildAid' where id = %s", (doc_id,))


def test_updates_and_deletes_of_another_agency_touch_nothing(as_worker, gabon_officer):
    with as_worker.cursor() as cur:
        claim(cur, *gabon_officer)
        cur.execute("update sync.reports set doc = '{}' where partition = 'agency=WildAid'")
        assert cur.rowcount == 0
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute("delete from sync.reports where partition = 'agency=WildAid'")


def test_without_claims_nothing_is_visible(as_worker, report_counts):
    with as_worker.cursor() as cur:
        for table in ("sync.reports", "sync.users", "sync.chatsters", "sync.chat_messages", "app.users",
                      "app.agencies"):
            cur.execute(f"select count(*) from {table}")
            assert cur.fetchone()[0] == 0, table


def test_worker_role_cannot_read_tokens_logins_or_settings(as_worker, gabon_officer):
    for table in ("app.tokens", "app.logins", "app.settings", "app.login_failures", "app.partition_clocks"):
        with as_worker.cursor() as cur:
            cur.execute("savepoint probe")
            claim(cur, *gabon_officer)
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute(f"select * from {table} limit 1")
            cur.execute("rollback to savepoint probe")
    # Even a global admin's claims do not open them.
    with as_worker.cursor() as cur:
        claim(cur, str(uuid.uuid4()), "globalAdmin", "")
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute("select hash from app.tokens limit 1")


def test_worker_role_cannot_turn_security_off(as_worker):
    with as_worker.cursor() as cur:
        for statement in ("set row_security = off; select count(*) from sync.reports",
                          "alter table sync.reports disable row level security",
                          "set role tideway_owner"):
            cur.execute("savepoint probe")
            with pytest.raises(psycopg2.Error) as raised:
                cur.execute(statement)
            assert raised.value.pgcode in ("42501", "42704"), (statement, raised.value.pgcode)
            cur.execute("rollback to savepoint probe")
