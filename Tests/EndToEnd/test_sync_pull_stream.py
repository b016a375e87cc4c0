"""A pull's answer is streamed: written out as PostgreSQL sends its rows (PullRoute,
docs/sync-protocol.md "Pull"). It must be the same JSON as a paged pull; an error before its
first byte is still the contract's error; an error after it never leaves a body a client
could take for a whole answer."""
import gzip
import json
import threading
import time
import uuid

import pytest
import requests

from conftest import URL, admin_db, error_of, new_user
from synclib import Client, change, doc_for, new_agency

# Enough changes for an answer of several of the worker's 64 KiB chunks.
DOCS = 1500


@pytest.fixture(scope="module")
def filled():
    """A fresh agency with DOCS reports and an officer of it."""
    agency = new_agency()
    partition = "agency=" + agency
    officer = Client(new_user(agency=agency))
    for start in range(0, DOCS, 500):
        changes = []
        for n in range(start, start + 500):
            doc_id = f"r-{n:05d}-{uuid.uuid4().hex[:6]}"
            doc = doc_for("reports", doc_id)
            doc["notes"] = [{"note": "streamed pull " + "x" * 120}]
            changes.append(change("insert", "reports", partition, doc_id, doc))
        assert all(r["status"] == "applied" for r in officer.push(changes))
    return officer, partition


def paged(client, partition, limit, cursor=None):
    """Every change after `cursor`, the final cursor and the pages, pulled `limit` at a time."""
    changes, pages = [], 0
    while True:
        entry = client.pull({partition: cursor}, limit=limit)[partition]
        assert entry["status"] == "ok", entry
        changes += entry["changes"]
        cursor = entry["cursor"]
        pages += 1
        if not entry["more"]:
            return changes, cursor, pages


def test_a_large_streamed_pull_is_the_paged_pull(filled):
    officer, partition = filled
    whole, whole_cursor, pages = paged(officer, partition, 10_000)
    assert pages == 1 and len(whole) >= DOCS
    by_page, page_cursor, pages = paged(officer, partition, 97)
    assert pages > DOCS // 97
    assert whole == by_page
    assert whole_cursor == page_cursor
    # The answer nginx gzipped as it came is the same JSON as the plain one, byte for byte.
    body = {"partitions": {partition: None}, "limit": 10_000}
    plain = officer.http.post(URL + "/api/v1/sync/pull", json=body, headers={"Accept-Encoding": "identity"}, timeout=60)
    zipped = officer.http.post(URL + "/api/v1/sync/pull", json=body, headers={"Accept-Encoding": "gzip"}, timeout=60,
                               stream=True)
    assert plain.status_code == zipped.status_code == 200
    assert plain.headers["Content-Type"] == "application/json"
    assert zipped.headers.get("Content-Encoding") == "gzip"
    assert gzip.decompress(zipped.raw.read(decode_content=False)) == plain.content
    assert json.loads(plain.content)["partitions"][partition]["changes"] == whole


def test_pages_that_end_amid_the_changes_say_more_and_go_on_from_there(filled):
    officer, partition = filled
    first = officer.pull({partition: None}, limit=DOCS - 7)[partition]
    assert first["more"] is True and len(first["changes"]) == DOCS - 7
    rest = officer.pull({partition: first["cursor"]}, limit=10_000)[partition]
    assert rest["more"] is False
    whole = officer.pull({partition: None}, limit=10_000)[partition]
    assert len(rest["changes"]) >= 7
    assert first["changes"] + rest["changes"] == whole["changes"]
    # A page that holds exactly what is left says no more.
    exact = officer.pull({partition: first["cursor"]}, limit=len(rest["changes"]))[partition]
    assert exact["more"] is False and exact["changes"] == rest["changes"] and exact["cursor"] == rest["cursor"]


def test_a_caught_up_clients_pull_pages_the_same_way(filled):
    # From a cursor at the partition's end (a pull after a change event: the worker may skip
    # the idle check, ChangeHub.moved) the page must say `more` and go on exactly as one from
    # the start, where it ends told by the row past the limit.
    officer, partition = filled
    whole, cursor, _ = paged(officer, partition, 10_000)
    updates = [change("update", "reports", partition, c["id"], {"draft": False}) for c in whole[:30]]
    assert all(r["status"] == "applied" for r in officer.push(updates))
    first = officer.pull({partition: cursor}, limit=10)[partition]
    assert first["more"] is True and len(first["changes"]) == 10
    rest, end, _ = paged(officer, partition, 10_000, first["cursor"])
    at_once = officer.pull({partition: cursor}, limit=10_000)[partition]
    assert at_once["more"] is False and len(at_once["changes"]) == 30
    assert first["changes"] + rest == at_once["changes"]
    assert end == at_once["cursor"]


def test_each_entry_holds_its_changes_before_its_cursor(filled):
    # Where a page ends is known only from its last rows: the changes stream out first.
    officer, partition = filled
    body = officer.pull_raw({partition: None, "nonsense": None}, limit=3).content
    entry = body[body.index(json.dumps(partition).encode()):]
    assert entry.index(b'"changes":[') < entry.index(b'"cursor":') < entry.index(b'"more":true}')
    assert body.startswith(b'{"partitions":{"nonsense":{"status":"invalid"},')


def test_a_pull_after_a_change_answers_it_and_an_idle_poll_after_it_none(filled):
    # The worker that saw the partition's clock skips the idle check for a cursor behind it;
    # a hint only: the answers are the snapshot's, whatever it knew.
    officer, partition = filled
    _, cursor, _ = paged(officer, partition, 10_000)
    other = Client(new_user(agency=partition.split("=", 1)[1]))
    doc_id = "r-after-" + uuid.uuid4().hex[:8]
    assert other.push([change("insert", "reports", partition, doc_id, doc_for("reports", doc_id))])[0]["status"] == "applied"
    for _ in range(4):  # both workers, at least once each in practice
        after = officer.pull({partition: cursor})[partition]
        assert [c["id"] for c in after["changes"]] == [doc_id] and after["more"] is False
        idle = officer.pull({partition: after["cursor"]})[partition]
        assert idle == {"status": "ok", "changes": [], "cursor": after["cursor"], "more": False}


def test_a_revoked_token_is_refused_even_when_the_partition_moved(filled):
    officer, partition = filled
    agency = partition.split("=", 1)[1]
    leaving = Client(new_user(agency=agency))
    _, cursor, _ = paged(leaving, partition, 10_000)
    doc_id = "r-revoked-" + uuid.uuid4().hex[:8]
    assert officer.push([change("insert", "reports", partition, doc_id, doc_for("reports", doc_id))])[0]["status"] == "applied"
    for _ in range(2):  # each worker learns the clock
        assert leaving.pull({partition: cursor})[partition]["changes"]
    assert leaving.post("/api/v1/auth/logout", {}).status_code == 204
    for _ in range(4):
        error_of(leaving.pull_raw({partition: cursor}), 401, "unauthenticated")


def blocked_backend(relation):
    """The pid of a backend waiting for a lock on `relation`, if one is."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select pid from pg_locks where not granted and relation = %s::regclass", (relation,))
        row = cur.fetchone()
        return row[0] if row else None


def pull_with_its_backend_killed(client, partitions, locked):
    """Pulls `partitions` while the table `locked` is held, terminating every backend that
    waits for that table (the pull's; a presence update of the same request may come first),
    and answers the response, its body read in full, or the error reading it raised."""
    holder = admin_db()
    holder.autocommit = False
    outcome = {}
    try:
        with holder.cursor() as cur:
            cur.execute(f"lock table {locked} in access exclusive mode")

        def pull():
            try:
                r = client.http.post(URL + "/api/v1/sync/pull", json={"partitions": partitions, "limit": 10_000},
                                     timeout=60, stream=True)
                r._content = r.raw.read(decode_content=True)
                outcome["response"] = r
            except Exception as e:  # what reading a cut response raises depends on where it was cut
                outcome["error"] = e

        thread = threading.Thread(target=pull)
        thread.start()
        killed = 0
        deadline = time.monotonic() + 30
        while thread.is_alive() and time.monotonic() < deadline:
            pid = blocked_backend(locked)
            if pid:
                with admin_db() as conn, conn.cursor() as cur:
                    cur.execute("select pg_terminate_backend(%s)", (pid,))
                killed += 1
            time.sleep(0.05)
        assert killed >= 1
    finally:
        holder.rollback()
        holder.close()
    thread.join(60)
    assert not thread.is_alive()
    return outcome


def test_an_error_after_the_first_byte_leaves_no_body_a_client_would_take(filled):
    officer, partition = filled
    # The agency's page streams out in full; the user partition's page, after it in the same
    # snapshot, waits for the locked table, and its backend is then terminated.
    both = {partition: None, f"user={officer.id}": None}
    outcome = pull_with_its_backend_killed(officer, both, "sync.users")
    # nginx closes the client's connection without ending the chunked body: reading fails.
    assert "error" in outcome, outcome["response"].content[-200:]
    # The worker goes on answering, and the same pull then succeeds whole.
    again = officer.pull(both, limit=10_000)
    assert len(again[partition]["changes"]) >= DOCS and again[partition]["more"] is False


def test_an_error_before_the_first_byte_is_the_contracts_error(filled):
    officer, partition = filled
    outcome = pull_with_its_backend_killed(officer, {partition: None}, "sync.reports")
    assert "error" not in outcome, outcome
    error_of(outcome["response"], 503, "unavailable")


def test_a_pull_renders_each_document_as_its_snapshot_saw_it(filled):
    # The page is sorted before its documents are rendered (PullQuery.changes: a large one
    # read from its TOAST pointer only then): each must still be the version the snapshot
    # saw, not one a push committed meanwhile. The pull takes its snapshot, then waits for a
    # locked table of the agency's kind while a push updates 30 reports and commits.
    officer, partition = filled
    before, cursor, _ = paged(officer, partition, 10_000)
    holder = admin_db()
    holder.autocommit = False
    outcome = {}
    try:
        with holder.cursor() as cur:
            cur.execute("lock table sync.mpas in access exclusive mode")

        def pull():
            outcome["entry"] = officer.pull({partition: None}, limit=10_000)[partition]

        thread = threading.Thread(target=pull)
        thread.start()
        deadline = time.monotonic() + 30
        while blocked_backend("sync.mpas") is None:
            assert time.monotonic() < deadline and thread.is_alive(), "the pull never waited for the locked table"
            time.sleep(0.05)
        note = {"notes": [{"note": "pushed during the pull"}]}
        updates = [change("update", "reports", partition, c["id"], note) for c in before[:30]]
        assert all(r["status"] == "applied" for r in officer.push(updates))
    finally:
        holder.rollback()
        holder.close()
    thread.join(60)
    assert outcome["entry"]["changes"] == before
    assert outcome["entry"]["cursor"] == cursor
    # The push's versions come with the next pull.
    after = officer.pull({partition: cursor}, limit=10_000)[partition]
    assert sorted(c["id"] for c in after["changes"]) == sorted(c["id"] for c in before[:30])
    assert all(c["doc"]["notes"] == [{"note": "pushed during the pull"}] for c in after["changes"])
