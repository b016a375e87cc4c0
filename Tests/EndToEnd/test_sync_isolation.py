"""The isolation matrix of sync-protocol.md's partition table: every demo role × every
partition kind × every collection × {pull, insert, update, delete}, table-driven, and the
database itself refusing cross-partition reads and writes made directly as the worker."""
import json
import uuid

import psycopg2
import psycopg2.errors
import pytest

from conftest import admin_db, claim, new_user, worker_db
from synclib import (KIND_COLLECTIONS, PATCHES, TABLES, Client, change, doc_for, ensure_user_document,
                     new_conversation, server_state, user_id)

ROLES = {
    # name: (email or None for a fresh chat-only user, role, agency)
    "globalAdmin": ("admin@demo.tideway", "globalAdmin", None),
    "agencyAdmin": ("gabon.admin@demo.tideway", "agencyAdmin", "Gabon"),
    "officer": ("gabon.officer1@demo.tideway", "officer", "Gabon"),
    "chatOnly": (None, "officer", None),
}
PARTITION_KINDS = ["own agency", "other agency", "nonexistent agency", "own user", "other user", "all-users",
                   "conversation not in"]
COLLECTIONS = list(TABLES)


@pytest.fixture(scope="module")
def world():
    """Signed-in clients for every role, and a target partition string for every kind."""
    clients = {}
    for name, (email, _, _) in ROLES.items():
        clients[name] = Client(email or new_user(agency=None))
    other_email = "wildaid.officer1@demo.tideway"
    other = user_id(other_email)
    for c in clients.values():
        ensure_user_document(c.id, c.email)
    ensure_user_document(other, other_email)
    # A conversation between two users none of the tested roles belongs to.
    conversation = new_conversation([other, user_id("wildaid.officer2@demo.tideway")])
    return {"clients": clients, "other_user": other, "conversation": conversation}


def partition_for(kind, role, client, world):
    agency = ROLES[role][2]
    return {
        # A role without an agency has no own agency: Gabon is then just some agency.
        "own agency": f"agency={agency or 'Gabon'}",
        "other agency": "agency=WildAid",
        "nonexistent agency": "agency=Nope",
        "own user": f"user={client.id}",
        "other user": f"user={world['other_user']}",
        "all-users": "all-users=all-the-users",
        "conversation not in": f"conversation={world['conversation']}",
    }[kind]


def can_read(role, partition, client):
    kind, value = partition.split("=", 1)
    _, role_name, agency = ROLES[role]
    if kind == "agency":
        return value != "Nope" and (role_name == "globalAdmin" or value == agency)
    if kind == "user":
        return value == client.id
    if kind == "all-users":
        return True
    return False  # a conversation the user is not in


def expected_write(role, partition, collection, client):
    """The contract's answer to a write: applied, forbidden or invalid."""
    kind, value = partition.split("=", 1)
    if collection not in KIND_COLLECTIONS[kind]:
        return "invalid"
    _, role_name, agency = ROLES[role]
    if kind == "agency":
        if value == "Nope":
            return "forbidden"
        if collection == "teamDirectory":
            return "forbidden"  # kept by the server alone
        if collection in ("reports", "photos", "dutyChanges"):
            return "applied" if value == agency else "forbidden"
        admin = role_name == "globalAdmin" or (role_name == "agencyAdmin" and value == agency)
        return "applied" if admin else "forbidden"
    if kind == "user":
        return "applied" if value == client.id else "forbidden"
    return "forbidden"  # chatsters: nobody; chatMessages: not a member


@pytest.mark.parametrize("role", list(ROLES))
def test_pull_matrix(world, role):
    client = world["clients"][role]
    partitions = {partition_for(k, role, client, world): None for k in PARTITION_KINDS}
    malformed = ["agency=", "user=a=b", "foo", "foo=bar", "user=not-a-uuid", "conversation=a/b"]
    readable = [p for p in partitions if can_read(role, p, client)]
    # The database is read before and after the pull: the server's own writers (the presence
    # sweeper marking a user Off-Line) may change a partition meanwhile, and only a pull whose
    # snapshot is known to match what the database holds can be compared with it.
    for _ in range(5):
        before = {p: server_state(p) for p in readable}
        answer = client.pull({**partitions, **{m: None for m in malformed}}, limit=10000)
        state = {p: server_state(p) for p in readable}
        if state == before:
            break
    assert set(answer) == set(partitions) | set(malformed)
    for m in malformed:
        assert answer[m] == {"status": "invalid"}, m
    for p in partitions:
        entry = answer[p]
        if not can_read(role, p, client):
            assert entry == {"status": "forbidden"}, (role, p, entry)
            continue
        assert entry["status"] == "ok" and entry["more"] is False, (role, p, entry)
        got = {(c["collection"], c["id"]): c["doc"] for c in entry["changes"] if c["op"] == "upsert"}
        # Exactly the partition's live documents, nothing of any other partition.
        assert got == state[p], (role, p)


def footprint(table, partition, collection, ids):
    """What a refused push must leave as it was: the partition's documents (how many, and their
    versions) and the documents it names (deleted or not, and the fields its update sets).
    The versions of users and chatsters are left out: the server rewrites a user's document
    and their chatster in all-users whenever their presence changes (nchan's stream hooks,
    the presence sweep, the stream-count reconciler every half minute: repeatable/0013,
    repeatable/0052), at any moment of a test; the named documents' fields and the count
    still show a refused change that was applied."""
    fields = list(PATCHES[collection])
    versions = "0" if collection in ("users", "chatsters") else "coalesce(sum(version), 0)"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(f"select count(*), {versions} from sync.{table} where partition = %s", (partition,))
        whole = cur.fetchone()
        cur.execute(f"select id::text, deleted, {', '.join(['doc -> %s'] * len(fields))} from sync.{table} "
                    "where id::text = any(%s) order by 1", (*fields, sorted(ids)))
        return whole, cur.fetchall()


@pytest.mark.parametrize("role", list(ROLES))
@pytest.mark.parametrize("kind", PARTITION_KINDS)
def test_push_matrix(world, role, kind):
    client = world["clients"][role]
    partition = partition_for(kind, role, client, world)
    outcomes = {}
    for collection in COLLECTIONS:
        expected = expected_write(role, partition, collection, client)
        table = TABLES[collection]
        if collection == "users":
            doc_id = partition.split("=", 1)[1] if partition.startswith("user=") else client.id
        else:
            doc_id = f"m-{uuid.uuid4().hex}"
        # An existing document of this partition to update and delete when the role may not
        # write (so that a refusal cannot come from "not found").
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute(f"select id from sync.{table} where partition = %s and not deleted limit 1", (partition,))
            row = cur.fetchone()
            existing = row[0] if row else None
        target = doc_id if expected == "applied" or existing is None else existing
        before = footprint(table, partition, collection, {doc_id, target})
        body = doc_for(collection, doc_id, email=client.email)
        if collection == "users" and expected == "applied":
            with admin_db() as conn, conn.cursor() as cur:
                cur.execute("select doc from sync.users where id = %s", (doc_id,))
                body = {**cur.fetchone()[0], "userPreferences": {"shareLocation": True}}
        changes = [change("insert", collection, partition, doc_id, body),
                   change("update", collection, partition, target, PATCHES[collection]),
                   change("delete", collection, partition, target)]
        results = client.push(changes)
        got = [r["status"] if r["status"] != "rejected" else r["error"]["code"] for r in results]
        want = [expected] * 3
        if collection == "users" and expected == "applied":
            want[2] = "forbidden"  # a user's own document cannot be deleted
        outcomes[collection] = (got, want)
        if expected != "applied":
            after = footprint(table, partition, collection, {doc_id, target})
            assert after == before, f"{role} {partition} {collection}: refused changes wrote something"
        else:
            with admin_db() as conn, conn.cursor() as cur:
                cur.execute(f"select deleted, version, partition from sync.{table} where id = %s", (doc_id,))
                deleted, version, stored_partition = cur.fetchone()
            assert stored_partition == partition
            assert deleted == (collection != "users")
    mismatches = {c: o for c, o in outcomes.items() if o[0] != o[1]}
    assert not mismatches, f"{role} × {kind}: got vs contract {mismatches}"


def test_database_refuses_cross_partition_reads_and_writes():
    officer = user_id("gabon.officer1@demo.tideway")
    other = user_id("wildaid.officer1@demo.tideway")
    ensure_user_document(other, "wildaid.officer1@demo.tideway")
    conversation = new_conversation([other])
    conn = worker_db()
    try:
        with conn.cursor() as cur:
            # No claims: the worker sees nothing at all.
            for table in TABLES.values():
                cur.execute(f"select count(*) from sync.{table}")
                assert cur.fetchone()[0] == 0, table
            conn.rollback()

            claim(cur, officer, "officer", "Gabon")
            cur.execute("select count(*) from sync.reports where partition = 'agency=Gabon'")
            assert cur.fetchone()[0] > 0
            for table in ["reports", "photos", "duty_changes", "menu_data", "mpas", "team_directory"]:
                cur.execute(f"select count(*) from sync.{table} where partition <> 'agency=Gabon'")
                assert cur.fetchone()[0] == 0, table
            cur.execute("select count(*) from sync.users where id = %s", (other,))
            assert cur.fetchone()[0] == 0
            cur.execute("select count(*) from sync.chat_messages where partition = %s", (f"conversation={conversation}",))
            assert cur.fetchone()[0] == 0
            # Updates of rows the policies hide touch nothing.
            cur.execute("update sync.reports set version = version + 1 where partition = 'agency=WildAid'")
            assert cur.rowcount == 0
            cur.execute("update sync.users set version = version + 1 where id = %s", (other,))
            assert cur.rowcount == 0
            cur.execute("update sync.menu_data set version = version + 1 where partition = 'agency=Gabon'")
            assert cur.rowcount == 0, "an officer may not write menuData"
            conn.rollback()

        refused = [
            ("insert into sync.reports (id, partition, doc, seq) values ('x1', 'agency=WildAid', '{}', 1)", ()),
            ("update sync.reports set partition = 'agency=WildAid' where partition = 'agency=Gabon'", ()),
            ("insert into sync.menu_data (id, partition, doc, seq) values ('x2', 'agency=Gabon', '{}', 1)", ()),
            ("insert into sync.users (id, partition, doc, seq) values (%s, %s, '{}', 1)", (other, f"user={other}")),
            ("insert into sync.chatsters (id, partition, doc, seq) values ('x3', 'all-users=all-the-users', '{}', 1)", ()),
            ("insert into sync.team_directory (id, partition, doc, seq) values ('x5', 'agency=Gabon', '{}', 1)", ()),
            ("update sync.team_directory set version = version + 1 where partition = 'agency=Gabon'", ()),
            ("insert into sync.chat_messages (id, partition, doc, seq) values ('x4', %s, '{}', 1)",
             (f"conversation={conversation}",)),
            ("select * from app.partition_clocks", ()),
            ("delete from sync.reports where partition = 'agency=Gabon'", ()),
        ]
        for statement, args in refused:
            with conn.cursor() as cur:
                claim(cur, officer, "officer", "Gabon")
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(statement, args)
            conn.rollback()

        # The write path function under the same claims answers forbidden and writes nothing.
        with conn.cursor() as cur:
            claim(cur, officer, "officer", "Gabon")
            cur.execute("select app.apply_change('reports', 'agency=WildAid', 'x5', 'insert', %s, null, 'c1')",
                        (json.dumps({"_id": "x5", "timestamp": "2024-05-01T10:00:00Z"}),))
            assert cur.fetchone()[0]["error"]["code"] == "forbidden"
        conn.rollback()
    finally:
        conn.close()
    with admin_db() as a, a.cursor() as cur:
        cur.execute("select count(*) from sync.reports where id in ('x1', 'x5')")
        assert cur.fetchone()[0] == 0
