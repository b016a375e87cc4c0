"""`tideway compact --older-than`: tombstones go, older cursors get `reset`, a pull from
null still works, and newer cursors carry on."""
import os
import subprocess
import uuid

from conftest import ADMIN_DB, admin_db, new_user
from synclib import Client, change, doc_for, new_agency, server_state

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def compact(older_than):
    return subprocess.run([os.path.join(REPO, ".build/release/tideway"), "compact", "--database", ADMIN_DB,
                           "--older-than", older_than], capture_output=True, text=True)


def tombstones(partition):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from sync.reports where partition = %s and deleted", (partition,))
        return cur.fetchone()[0]


def test_compaction_resets_older_cursors_and_a_pull_from_null_works():
    key = new_agency()
    p = f"agency={key}"
    officer = Client(new_user(agency=key))
    a, b = f"cp-{uuid.uuid4().hex}", f"cp-{uuid.uuid4().hex}"
    officer.push([change("insert", "reports", p, a, doc_for("reports", a)),
                  change("insert", "reports", p, b, doc_for("reports", b))])
    before_delete = officer.pull({p: None})[p]["cursor"]
    officer.push([change("delete", "reports", p, a)])
    after_delete = officer.pull({p: before_delete})[p]
    assert [(c["id"], c["op"]) for c in after_delete["changes"]] == [(a, "delete")]
    after_delete = after_delete["cursor"]

    # Too young to go: nothing changes.
    done = compact("90d")
    assert done.returncode == 0, done.stderr
    assert tombstones(p) == 1
    assert officer.pull({p: before_delete})[p]["status"] == "ok"

    done = compact("0s")
    assert done.returncode == 0, done.stderr
    assert "compacted" in done.stdout
    assert tombstones(p) == 0
    answer = officer.pull({p: before_delete, "agency=Gabon": None}, limit=1)
    assert answer[p] == {"status": "reset"}
    assert answer["agency=Gabon"]["status"] == "forbidden"
    # Dropping the copy and pulling from null gives exactly the server's state, no tombstone.
    fresh = officer.pull({p: None})[p]
    assert fresh["status"] == "ok" and fresh["more"] is False
    assert [(c["id"], c["op"]) for c in fresh["changes"]] == [(b, "upsert")]
    assert {("reports", c["id"]): c["doc"] for c in fresh["changes"]} == server_state(p)
    # A cursor taken after the delete missed nothing and carries on.
    later = officer.pull({p: after_delete})[p]
    assert later["status"] == "ok" and later["changes"] == []
    # And the new cursor from null keeps working as changes come.
    c = f"cp-{uuid.uuid4().hex}"
    officer.push([change("insert", "reports", p, c, doc_for("reports", c))])
    assert [x["id"] for x in officer.pull({p: fresh["cursor"]})[p]["changes"]] == [c]


def test_compact_refuses_a_malformed_duration():
    for bad in ["90", "d", "-1d", "1w", "ninety days"]:
        done = compact(bad)
        assert done.returncode != 0, bad


def test_a_fresh_client_pages_from_null_after_a_compaction_without_resets():
    key = new_agency()
    p = f"agency={key}"
    officer = Client(new_user(agency=key))
    ids = [f"pg-{i}-{uuid.uuid4().hex}" for i in range(6)]
    officer.push([change("insert", "reports", p, d, doc_for("reports", d)) for d in ids])
    officer.push([change("delete", "reports", p, d) for d in ids[4:]])
    assert compact("0s").returncode == 0
    # Every page's cursor is behind the compaction horizon, yet given after it: no reset.
    cursor, seen, pages = None, {}, 0
    while True:
        entry = officer.pull({p: cursor}, limit=1)[p]
        assert entry["status"] == "ok", entry
        seen.update({("reports", c["id"]): c["doc"] for c in entry["changes"]})
        cursor, pages = entry["cursor"], pages + 1
        if not entry["more"]:
            break
    assert pages >= 4
    assert seen == server_state(p)
