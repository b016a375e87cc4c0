"""`tideway import` (issue 18): a Realm app's data from MongoDB Atlas exports (mongodump
BSON, gzipped or not, and mongoexport Extended JSON, canonical and relaxed) arrives with the
same content, ids and partitions, through the sync write path; photos end in the blob store,
history chains verify, users get invitations; bad input is named and refused alone; a second
run changes nothing; a run killed with -9 finishes on the next without duplicates."""
import tempfile
import os
import re
import signal
import subprocess
import time

import pytest
from bson import ObjectId

from admin_support import GLOBAL_ADMIN, browser_as
from conftest import URL, admin_db, api, session, token
from mail_support import wait_for_mail
from import_support import TIDEWAY, ChatExport, Export, expected, iso, report, run_import, write_bson, write_json_lines
from patrol_support import tideway, tool_env, wait_for


def scratch_report():
    """A throwaway report path. Never /dev/null: the report is written atomically (a temporary
    file renamed over the target), which would replace /dev/null with a regular file."""
    fd, path = tempfile.mkstemp(suffix=".json", prefix="import-report-")
    os.close(fd)
    return path



def docs(table, partition):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(f"select id, doc from sync.{table} where partition = %s and not deleted", (partition,))
        return dict(cur.fetchall())


def state_of(partition):
    """Everything an import could change for the partition: clock, versions, history."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select seq from app.partition_clocks where partition = %s", (partition,))
        clock = cur.fetchone()
        cur.execute("select count(*), coalesce(max(id), 0) from app.report_history where partition = %s", (partition,))
        history = cur.fetchone()
        cur.execute("select count(*) from app.users where agency = %s", (partition[7:],))
        users = cur.fetchone()
    return clock, history, users


def counts_line(out, collection):
    """created, updated, skipped, refused of a collection in the printed summary."""
    m = re.search(rf"^\s+{re.escape(collection)}\s+\S.*?\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", out, re.M)
    assert m, out
    return tuple(int(x) for x in m.groups())


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    export = Export(str(tmp_path_factory.mktemp("atlas"))).write()
    result = run_import(export.dump, export.export, "--report", str(tmp_path_factory.mktemp("report") / "report.json"))
    return export, result.stdout


def test_every_document_arrives_with_its_content_id_and_partition(imported):
    export, out = imported
    reports = docs("reports", export.partition)
    assert reports == {str(r["_id"]): expected(r) for r in export.reports}
    assert counts_line(out, "BoardingReports") == (20, 0, 0, 0)
    duty = docs("duty_changes", export.partition)
    assert {k: v["status"] for k, v in duty.items()} == {
        str(d["_id"]): {"At Sea": "On Duty", "On Land": "Off Duty"}.get(d["status"], d["status"]) for d in export.duty}
    assert duty[str(export.duty[0]["_id"])]["user"] == export.duty[0]["user"]
    menu = docs("menu_data", export.partition)
    assert menu == {str(m["_id"]): expected(m) for m in export.menu}
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select description, email, active from app.agencies where key = %s", (export.agency,))
        assert cur.fetchone() == ("From Atlas", export.agencies[0]["email"], True)
    # The drift rules applied are reported, by rule and path.
    assert "empty-as-missing at /date: 1" in out and "extra-field at /webOnly: 1" in out
    assert "numeric-string at /inspection/actualCatch/-/weight: 1" in out and "status-alias at /status: 2" in out
    # Through the write path: numbered by the partition's clock, device "import" in the history.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(distinct seq), min(version), max(version) from sync.reports where partition = %s",
                    (export.partition,))
        assert cur.fetchone() == (len(export.reports), 1, 1)


def test_a_device_of_the_agency_pulls_what_was_imported(imported):
    export, _ = imported
    admin = token(GLOBAL_ADMIN)
    r = api("POST", "/api/v1/sync/pull", admin, json={"partitions": {export.partition: None}, "limit": 1000})
    assert r.status_code == 200, r.text
    ids = {c["id"] for c in r.json()["partitions"][export.partition]["changes"]}
    assert {str(x["_id"]) for x in export.reports + export.duty + export.menu} <= ids


def test_photos_move_to_the_blob_store_and_are_served_from_it(imported):
    export, _ = imported
    admin = token(GLOBAL_ADMIN)

    def offloaded():
        photos = docs("photos", export.partition)
        return len(photos) == 2 and all("picture" not in p and p.get("pictureURL") for p in photos.values()) and photos

    photos = wait_for(offloaded, timeout=60)
    assert photos, docs("photos", export.partition)
    for source, picture in zip(export.photos, export.pictures):
        doc = photos[str(source["_id"])]
        assert doc["referencingReportID"] == str(export.reports[0]["_id"])
        assert doc["pictureURL"] == f"/api/v1/blobs/{source['_id']}"
        r = api("GET", doc["pictureURL"], admin)
        assert r.status_code == 200 and r.content == picture


def test_change_history_heads_the_reports_chain_marked_imported_and_verifies(imported):
    export, _ = imported
    rid = str(export.reports[0]["_id"])
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select device, op, version, change -> 'originalDocument' -> 'vessel' ->> 'name', change ->> 'importedFrom'"
                    " from app.report_history where report_id = %s order by id", (rid,))
        rows = cur.fetchall()
    assert rows == [("import", "update", 0, "Old name 3", "ChangeHistory"), ("import", "update", 0, "Old name 2", "ChangeHistory"),
                    ("import", "insert", 1, None, None)]
    assert tideway("verify-history").returncode == 0


def test_users_are_invited_without_passwords_and_their_links_work(imported):
    export, out = imported
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select email, role, agency, password_hash is null, active from app.users where agency = %s order by role, email",
                    (export.agency,))
        assert cur.fetchall() == [(export.users[1]["email"], "agencyAdmin", export.agency, True, True),
                                  (export.users[2]["email"], "officer", export.agency, True, False),
                                  (export.users[0]["email"], "officer", export.agency, True, True)]
    links = dict(re.findall(r"^\s+(\S+@fish\.example)\s+(https://\S+/invite/\S+)\s+\(not mailed \(no relay configured\)\)$", out, re.M))
    assert set(links) == {u["email"] for u in export.users[:2]}
    page = session().get(URL + "/invite/" + links[export.users[0]["email"]].rsplit("/", 1)[1])
    assert page.status_code == 200 and export.users[0]["email"] in page.text


def test_the_back_office_audit_log_shows_the_import(imported):
    _, out = imported
    run = re.search(r"audit log: (import:[0-9a-f]+)", out).group(1)
    page = browser_as(GLOBAL_ADMIN).get(URL + "/audit", params={"q": run}).text
    page = page.replace("&quot;", '"')
    # 1 agency, 3 users, 1 menu, 2 history entries, 20 reports, 2 photos, 4 duty changes.
    assert run in page and '"created": 33' in page and '"refused": 0' in page and '"invitations": 2' in page


def test_a_second_run_changes_nothing(imported):
    export, _ = imported
    before = state_of(export.partition), docs("reports", export.partition), docs("photos", export.partition)
    out = run_import(export.dump, export.export, "--report", scratch_report()).stdout
    assert counts_line(out, "BoardingReports") == (0, 0, 20, 0)
    assert counts_line(out, "Photo") == (0, 0, 2, 0)
    assert counts_line(out, "User") == (0, 0, 3, 0)
    assert counts_line(out, "Agency") == (0, 0, 1, 0)
    assert "invitations" not in out
    assert (state_of(export.partition), docs("reports", export.partition), docs("photos", export.partition)) == before


def test_a_dry_run_counts_and_groups_but_writes_nothing(imported, tmp_path):
    export, _ = imported
    changed = dict(export.reports[5], vessel=dict(export.reports[5]["vessel"], name="Renamed"))
    new = report(export.rnd, export.agency)
    bad = report(export.rnd, export.agency)
    bad["inspection"]["actualCatch"][0]["number"] = -3
    bad2 = report(export.rnd, export.agency)
    bad2["inspection"]["actualCatch"][0]["number"] = -4
    write_bson(str(tmp_path / "d" / "BoardingReports.bson"), [changed, new, bad, bad2, export.reports[6]])
    before = state_of(export.partition), docs("reports", export.partition)
    out = run_import("--dry-run", str(tmp_path / "d")).stdout
    assert "dry run" in out
    assert counts_line(out, "BoardingReports") == (1, 1, 1, 2)
    assert re.search(r"/inspection/actualCatch/-/number: expected integer ≥ 0 — 2 documents: \S*BoardingReports.bson #3 "
                     rf"_id {bad['_id']}; \S*BoardingReports.bson #4 _id {bad2['_id']}", out), out
    assert (state_of(export.partition), docs("reports", export.partition)) == before


def test_bad_input_is_named_refused_alone_and_the_rest_arrives(tmp_path):
    export = Export(str(tmp_path / "x"), seed=7, reports=8)
    export.write()
    db = os.path.join(export.dump, "wildaid")
    # A truncated BSON file: the cut document and the ones after it are lost, the first stay.
    path = os.path.join(db, "BoardingReports.bson")
    write_bson(path, export.reports[:5])
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:-40])
    # Wrong types (a string location, a number as a crew name), an unknown collection, and
    # a duplicate _id across two files.
    wrong = report(export.rnd, export.agency, location="Galápagos")
    wrong2 = report(export.rnd, export.agency)
    wrong2["captain"]["name"] = 12
    write_json_lines(os.path.join(export.export, "BoardingReports.json"),
                     export.reports[5:] + [wrong, wrong2, dict(export.reports[0], draft=True)])
    write_bson(os.path.join(db, "Boats.bson"), [{"_id": ObjectId(), "name": "x"}])
    result = run_import(export.dump, export.export, "--report", str(tmp_path / "r.json"))
    out = result.stdout
    assert re.search(r"BoardingReports\.bson: document #5 \(byte \d+\): truncated", out), out
    assert re.search(r"Boats\.bson: unknown collection 'Boats': not imported", out), out
    assert re.search(rf"/location: expected \[lon, lat\], got string — 1 document: \S+BoardingReports\.json #4 _id {wrong['_id']}",
                     out) or re.search(rf"/location: .* — 1 document: \S+BoardingReports\.json #4 _id {wrong['_id']}", out), out
    assert re.search(rf"/captain/name: .* — 1 document: \S+BoardingReports\.json #5 _id {wrong2['_id']}", out), out
    assert re.search(rf"/_id: duplicate _id \(the first one, \S+BoardingReports\.bson #1 _id {export.reports[0]['_id']}, is imported\)"
                     rf" — 1 document: \S+BoardingReports\.json #6", out), out
    reports = docs("reports", export.partition)
    # 4 whole documents of the truncated file, 3 good ones of the JSON file.
    assert set(reports) == {str(r["_id"]) for r in export.reports[:4] + export.reports[5:]}
    assert reports[str(export.reports[0]["_id"])]["draft"] is False
    with admin_db() as conn, conn.cursor() as cur:
        # Nothing half-written: no history, clock tick or row for a refused document.
        cur.execute("select count(*) from app.report_history where report_id = any(%s)",
                    ([str(wrong["_id"]), str(wrong2["_id"]), str(export.reports[4]["_id"])],))
        assert cur.fetchone()[0] == 0
    assert tideway("verify-history").returncode == 0


def test_an_import_killed_with_minus_9_finishes_on_the_next_run_without_duplicates(tmp_path):
    export = Export(str(tmp_path / "big"), seed=9, reports=3000)
    export.write()
    args = [TIDEWAY, "import", "--quiet", "--batch-size", "100", "--report", scratch_report(), export.dump, export.export]
    process = subprocess.Popen(args, env=tool_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def some_written():
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select count(*) from sync.reports where partition = %s", (export.partition,))
            return cur.fetchone()[0] >= 300

    assert wait_for(some_written, timeout=120, interval=0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from sync.reports where partition = %s", (export.partition,))
        halfway = cur.fetchone()[0]
    assert 0 < halfway < 3000
    out = run_import(export.dump, export.export, "--report", scratch_report()).stdout
    created, updated, skipped, refused = counts_line(out, "BoardingReports")
    assert (updated, refused) == (0, 0) and created + skipped == 3000 and skipped > 0
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("""select count(*), count(distinct id) from sync.reports where partition = %s""", (export.partition,))
        assert cur.fetchone() == (3000, 3000)
        # One insert entry per report: nothing written twice.
        cur.execute("""select count(*), count(distinct report_id) from app.report_history
                        where partition = %s and op = 'insert'""", (export.partition,))
        assert cur.fetchone() == (3000, 3000)
    assert docs("reports", export.partition) == {str(r["_id"]): expected(r) for r in export.reports}
    assert tideway("verify-history").returncode == 0


def test_rchat_users_conversations_and_messages_arrive_through_the_write_path(tmp_path):
    chat = ChatExport(str(tmp_path)).write()
    out = run_import(chat.folder, "--report", "/dev/null").stdout
    assert counts_line(out, "User") == (3, 0, 0, 0)
    assert counts_line(out, "conversations (from User)") == (1, 0, 0, 0)
    assert counts_line(out, "ChatMessage") == (7, 0, 0, 1)
    assert counts_line(out, "Chatster") == (0, 0, 3, 0)
    assert re.search(r"/author: no account with this userName .* — 1 document: \S+ChatMessage\.json #8", out), out
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select lower(email), id::text from app.users where lower(email) = any(%s)", (chat.names,))
        ids = dict(cur.fetchall())
        cur.execute("select user_id::text, unread from app.conversation_members where conversation_id = %s and active",
                    (chat.conversation,))
        assert dict(cur.fetchall()) == {ids[n]: chat.unread[n] for n in chat.names}
        cur.execute("select id, doc from sync.chat_messages where partition = %s order by seq", ("conversation=" + chat.conversation,))
        stored = cur.fetchall()
        cur.execute("select doc -> 'conversations' -> 0 ->> 'unreadCount' from sync.users where id = %s", (ids[chat.names[2]],))
        assert cur.fetchone()[0] == "7"
    # In timestamp order, by their authors, with the original time kept.
    assert [s[0] for s in stored] == [m["_id"] for m in chat.messages]
    for (_, doc), m in zip(stored, chat.messages):
        assert (doc["author"], doc["authorId"], doc["text"], doc["timestamp"]) == (m["author"], ids[m["author"]], m["text"],
                                                                                 iso(m["timestamp"]))
        assert "location" not in doc and "serverTimestamp" in doc
    again = run_import(chat.folder, "--report", "/dev/null").stdout
    assert counts_line(again, "ChatMessage") == (0, 0, 7, 1)
    assert counts_line(again, "conversations (from User)") == (0, 0, 1, 0)


@pytest.mark.skipif(not os.environ.get("SMTP_SINK_PORT"), reason="no mail sink (run through make test)")
def test_with_a_relay_configured_the_invitations_are_also_mailed(tmp_path):
    export = Export(str(tmp_path), seed=3, reports=5).write()
    relay = {"TIDEWAY_SMTP_HOST": "127.0.0.1", "TIDEWAY_SMTP_PORT": os.environ["SMTP_SINK_PORT"], "TIDEWAY_SMTP_TLS": "none",
             "TIDEWAY_PUBLIC_URL": URL}
    out = run_import(export.dump, "--report", "/dev/null", env=relay).stdout
    for user in export.users[:2]:
        printed = re.search(rf"^\s+{re.escape(user['email'])}\s+(https://\S+)\s+\(mailed\)$", out, re.M)
        assert printed, out
        mail = wait_for_mail(user["email"])[0]
        assert mail.link == printed.group(1) and mail.message["Subject"] == "Your Tideway account"
