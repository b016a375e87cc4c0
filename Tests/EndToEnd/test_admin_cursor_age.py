"""Cursor age in the sync inspector: a pull that names its device (clientId) records
where the device's cursors stand; /sync and the user's page then show how long ago the
oldest change it has not pulled was written, or "up to date"."""
import html
import json
import os
import re
import uuid

from admin_support import browser_as
from conftest import STATE, URL, admin_db, error_of, fastcgi, new_user
from synclib import Client, change, doc_for, new_agency


def cursor_age(page, client_id):
    """The cursor-age cell of the row that names `client_id`."""
    for row in re.findall(r"<tr>.*?</tr>", html.unescape(page), re.S):
        if f"<td>{client_id}</td>" in row:
            return re.search(r'<td class="cursor-age">([^<]*)</td>', row).group(1)
    raise AssertionError(f"no row for {client_id}")


def device_row(user_id, client_id):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select last_pull, pulled_through from app.devices where user_id = %s and client_id = %s",
                    (user_id, client_id))
        return cur.fetchone()


def pull_all(client, partition, cursor, client_id):
    while True:
        entry = client.post("/api/v1/sync/pull", {"partitions": {partition: cursor}, "clientId": client_id}).json()
        entry = entry["partitions"][partition]
        assert entry["status"] == "ok", entry
        cursor = entry["cursor"]
        if not entry["more"]:
            return cursor


def test_cursor_age_shows_how_far_behind_a_device_is():
    agency = new_agency()
    partition = "agency=" + agency
    officer = Client(new_user(agency=agency))
    admin = browser_as(new_user(role="agencyAdmin", agency=agency))
    phone, tablet = "phone-" + uuid.uuid4().hex[:8], "tablet-" + uuid.uuid4().hex[:8]
    first = uuid.uuid4().hex
    assert officer.push([change("insert", "reports", partition, first, doc_for("reports", first))],
                        client_id=phone)[0]["status"] == "applied"
    # Pushed but never pulled: no cursor to age.
    assert cursor_age(admin.get(URL + "/sync").text, phone) == "—"

    cursor = pull_all(officer, partition, None, phone)
    last_pull, positions = device_row(officer.id, phone)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select seq from app.partition_clocks where partition = %s", (partition,))
        assert last_pull is not None and positions == {partition: cur.fetchone()[0]}
    assert cursor_age(admin.get(URL + "/sync").text, phone) == "up to date"

    # Another device writes; the phone has not pulled that yet. Its write is dated back
    # so that the age does not depend on the clock.
    second = uuid.uuid4().hex
    assert officer.push([change("insert", "reports", partition, second, doc_for("reports", second))],
                        client_id=tablet)[0]["status"] == "applied"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update sync.reports set updated_at = now() - interval '2 hours 5 minutes 10 seconds' where id = %s", (second,))
    assert cursor_age(admin.get(URL + "/sync").text, phone) == "behind by 2 h 5 min"
    assert cursor_age(admin.get(URL + f"/users/{officer.id}").text, phone) == "behind by 2 h 5 min"

    cursor = pull_all(officer, partition, cursor, phone)
    assert cursor_age(admin.get(URL + "/sync").text, phone) == "up to date"
    assert cursor_age(admin.get(URL + f"/users/{officer.id}").text, phone) == "up to date"
    # An idle poll answers as before and leaves the device up to date.
    assert pull_all(officer, partition, cursor, phone)
    assert cursor_age(admin.get(URL + "/sync").text, phone) == "up to date"


def test_a_pull_without_client_id_records_nothing_and_a_bad_one_is_refused():
    agency = new_agency()
    officer = Client(new_user(agency=agency))
    assert officer.pull({"agency=" + agency: None})["agency=" + agency]["status"] == "ok"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.devices where user_id = %s", (officer.id,))
        assert cur.fetchone()[0] == 0
    for bad in ["", 7, "x" * 201, ["a"]]:
        r = officer.post("/api/v1/sync/pull", {"partitions": {"agency=" + agency: None}, "clientId": bad})
        error_of(r, 400, "bad_request")


def test_idle_polls_do_not_write():
    """Straight to one worker, so that its memory of what it wrote is the one asked."""
    agency = new_agency()
    partition = "agency=" + agency
    officer = Client(new_user(agency=agency))
    phone = "phone-" + uuid.uuid4().hex[:8]
    sock = os.path.join(STATE, "run", "worker-1.sock")

    def pull(cursor):
        body = json.dumps({"partitions": {partition: cursor}, "clientId": phone}).encode()
        status, _, answer = fastcgi(sock, "POST", "/api/v1/sync/pull", body=body,
                                    headers={"Content-Type": "application/json", "Authorization": f"Bearer {officer.token}"})
        assert status == 200, answer
        return json.loads(answer)["partitions"][partition]["cursor"]

    def row_version():
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select xmin::text, last_pull from app.devices where user_id = %s and client_id = %s", (officer.id, phone))
            return cur.fetchone()

    cursor = pull(None)
    written = row_version()
    assert written is not None
    for _ in range(5):
        assert pull(cursor) == cursor
    assert row_version() == written
    # A change moves the position: the next pull writes again.
    doc_id = uuid.uuid4().hex
    assert officer.push([change("insert", "reports", partition, doc_id, doc_for("reports", doc_id))])[0]["status"] == "applied"
    assert pull(cursor) != cursor
    assert row_version() != written
