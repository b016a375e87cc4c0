"""The back office's /teams pages (issue 17): in a real headless Chromium an agency admin
creates a team, gives two officers different rights and assigns a task, and the officers'
devices see exactly what their rights allow; then who may open and post which page, and
the audit log of it all."""
import re
import uuid

import pytest

from admin_support import GLOBAL_ADMIN, browser_as, post
from browser_support import HAVE_CHROMIUM, NO_CHROMIUM, chromium, shot
from conftest import URL, admin_db, new_user
from synclib import Client, change, doc_for, new_agency, new_team

if not HAVE_CHROMIUM:
    pytest.skip(NO_CHROMIUM, allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.expected_conditions import staleness_of  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from test_admin_browser import sign_in  # noqa: E402


def submit(driver, form):
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def test_an_admin_creates_a_team_grants_two_officers_and_assigns_a_task():
    key = new_agency()
    admin_email = new_user(role="agencyAdmin", agency=key)
    writer_email, reader_email, outsider_email = (new_user(agency=key) for _ in range(3))
    driver = chromium()
    try:
        wait = WebDriverWait(driver, 20)
        sign_in(driver, admin_email)
        driver.get(URL + "/teams")
        form = driver.find_element(By.CSS_SELECTOR, "form[action='/teams']")
        form.find_element(By.NAME, "name").send_keys("Patrol boat Amani")
        Select(form.find_element(By.NAME, "agency")).select_by_value(key)
        submit(driver, form)
        wait.until(lambda d: re.search(r"/teams/[0-9a-f-]{36}", d.current_url))
        team_id = re.search(r"/teams/([0-9a-f-]{36})", driver.current_url).group(1)
        partition = "team=" + team_id
        for email, right in ((writer_email, "write"), (reader_email, "read")):
            form = driver.find_element(By.CSS_SELECTOR, "form[action$='/grants']")
            Select(form.find_element(By.NAME, "kind")).select_by_value("user")
            form.find_element(By.NAME, "who").send_keys(email)
            Select(form.find_element(By.NAME, "right")).select_by_value(right)
            submit(driver, form)
            wait.until(lambda d: "saved=1" in d.current_url)
            driver.get(URL + "/teams/" + team_id)
        members = driver.find_element(By.ID, "members").text
        assert writer_email in members and reader_email in members and admin_email in members
        form = driver.find_element(By.CSS_SELECTOR, "form[action$='/tasks']")
        form.find_element(By.NAME, "title").send_keys("Board the trawler at the reef")
        form.find_element(By.NAME, "lon").send_keys("9.4")
        form.find_element(By.NAME, "lat").send_keys("0.3")
        submit(driver, form)
        wait.until(lambda d: "saved=1" in d.current_url)
        assert "Board the trawler at the reef" in driver.find_element(By.ID, "tasks").text
        # The map of tasks: one dot per task with a position, or at the centre of the
        # protected area it names; each links to its row of the table.
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("insert into sync.mpas (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))",
                        ("mpa-" + uuid.uuid4().hex[:8], f"agency={key}",
                         '{"name": "Reef <b>area</b>", "coordinates": [[9.0, 0.0], [9.6, 0.0], [9.6, 0.6], [9.0, 0.6], [9.0, 0.0]]}',
                         f"agency={key}"))
        form = driver.find_element(By.CSS_SELECTOR, "form[action$='/tasks']")
        form.find_element(By.NAME, "title").send_keys("Count the nets in the reserve")
        form.find_element(By.NAME, "mpa").send_keys("Reef <b>area</b>")
        page = driver.find_element(By.TAG_NAME, "html")
        submit(driver, form)
        # The answer redirects to the same URL: wait for the old page to go before reading the new.
        wait.until(staleness_of(page))
        wait.until(lambda d: "Count the nets" in d.find_element(By.ID, "tasks").text)
        figure = driver.find_element(By.CSS_SELECTOR, "#chart-map svg.map")
        dots = figure.find_elements(By.CSS_SELECTOR, "circle.point")
        assert len(dots) == 2
        assert len(figure.find_elements(By.CSS_SELECTOR, "path.mpa")) == 1
        links = [a.get_dom_attribute("href").split("#", 1)[1] for a in figure.find_elements(By.CSS_SELECTOR, "a")]
        rows = [r.get_attribute("id") for r in driver.find_elements(By.CSS_SELECTOR, "#tasks tbody tr[id]")]
        assert sorted(links) == sorted(rows) and len(rows) == 2
        titles = [t.get_attribute("textContent") for t in figure.find_elements(By.CSS_SELECTOR, "circle.point title")]
        assert "Task Count the nets in the reserve · open · in Reef <b>area</b>" in titles
        assert driver.find_elements(By.CSS_SELECTOR, "#tasks b") == []  # the area's name stays text
        driver.execute_script("document.getElementById('chart-map').scrollIntoView()")
        shot(driver, "teams-team")
    finally:
        driver.quit()

    writer, reader, outsider = Client(writer_email), Client(reader_email), Client(outsider_email)
    # The officers' devices: both pull the assigned task; only the writer may push.
    for officer in (writer, reader):
        entry = officer.pull({partition: None})[partition]
        assert entry["status"] == "ok"
        titles = [c["doc"]["title"] for c in entry["changes"] if c["collection"] == "tasks"]
        assert sorted(titles) == ["Board the trawler at the reef", "Count the nets in the reserve"]
    assert outsider.pull({partition: None}) == {partition: {"status": "forbidden"}}
    task_id = [c["id"] for c in writer.pull({partition: None})[partition]["changes"]][0]
    assert writer.push([change("update", "tasks", partition, task_id, {"status": "done"})])[0]["status"] == "applied"
    assert reader.push([change("update", "tasks", partition, task_id, {"status": "open"})])[0]["error"]["code"] == "forbidden"
    note = f"n-{uuid.uuid4().hex}"
    assert reader.push([change("insert", "teamNotes", partition, note, doc_for("teamNotes", note))])[0]["error"]["code"] == "forbidden"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select doc->>'status' from sync.agency_tasks where id = %s", (task_id,))
        assert cur.fetchone()[0] == "done", "the team's status flows back to the agency's task"
        cur.execute("select action from app.audit_log where target = %s order by id", (partition,))
        assert [a for (a,) in cur.fetchall()] == ["team.create", "grant.set", "grant.set"]


def test_who_may_open_and_post_the_team_pages():
    key = new_agency()
    admin_email = new_user(role="agencyAdmin", agency=key)
    team = new_team(admin_email, key, "Page crew")
    team_id = team[5:]
    member_email, stranger_email = new_user(agency=key), new_user(agency="Gabon")
    admin = browser_as(admin_email)
    assert post(admin, f"/teams/{team_id}/grants", {"kind": "user", "who": member_email, "right": "read"}).status_code == 303
    member, stranger, global_admin = browser_as(member_email), browser_as(stranger_email), browser_as(GLOBAL_ADMIN)
    # The list: the agency's users see the agency's teams, others do not.
    assert "Page crew" in member.get(URL + "/teams").text
    assert "Page crew" not in stranger.get(URL + "/teams").text
    assert "Page crew" in global_admin.get(URL + "/teams").text
    # The team page: the member sees it without the managers' forms; a stranger gets 404.
    page = member.get(URL + f"/teams/{team_id}")
    assert page.status_code == 200 and "grants/revoke" not in page.text and "Grant a right" not in page.text
    assert stranger.get(URL + f"/teams/{team_id}").status_code == 404
    assert member.get(URL + "/teams/not-a-team").status_code == 404
    page = admin.get(URL + f"/teams/{team_id}")
    assert "Grant a right" in page.text and member_email in page.text and "Assign a task" in page.text
    # Posting what one may not: refused, nothing written.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.grants where partition = %s", (team,))
        before = cur.fetchone()[0]
    for browser, status in ((member, 403), (stranger, 404)):
        assert post(browser, f"/teams/{team_id}/grants", {"kind": "everyone", "right": "manage"}).status_code == status
        assert post(browser, f"/teams/{team_id}", {"name": "Mine now"}).status_code == status
        assert post(browser, f"/teams/{team_id}/tasks", {"title": "x"}).status_code in (403, 404)
    assert post(member, "/teams", {"name": "Officer's team", "agency": key}).status_code == 403
    assert post(admin, "/teams", {"name": "Gabon's team", "agency": "Gabon"}).status_code == 403
    assert post(admin, f"/teams/{team_id}/grants", {"kind": "user", "who": member_email, "right": "owner"}).status_code == 422
    assert post(admin, f"/teams/{team_id}/grants", {"kind": "everyone", "right": "read"}, csrf="forged").status_code == 403
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.grants where partition = %s", (team,))
        assert cur.fetchone()[0] == before
        cur.execute("select name from app.teams where id = %s", (team_id,))
        assert cur.fetchone()[0] == "Page crew"
    # Rename and archive, then revoke; the global admin sees it all in the team's audit log.
    assert post(admin, f"/teams/{team_id}", {"name": "Renamed crew", "description": "d"}).status_code == 303
    assert post(admin, f"/teams/{team_id}", {"archived": "true"}).status_code == 303
    member_id = Client(member_email).id
    assert post(admin, f"/teams/{team_id}/grants/revoke", {"kind": "user", "grantee": member_id}).status_code == 303
    assert member.get(URL + f"/teams/{team_id}").status_code == 200  # still the agency's team: listed, no right
    audit = global_admin.get(URL + f"/teams/{team_id}").text
    for action in ("team.create", "grant.set", "team.update", "team.archive", "grant.revoke"):
        assert action in audit, action
    assert "Archived" in audit and "Renamed crew" in audit


def test_the_task_form_refuses_bad_input_and_writes_nothing():
    key = new_agency()
    admin_email = new_user(role="agencyAdmin", agency=key)
    team_id = new_team(admin_email, key, "Form crew")[5:]
    admin = browser_as(admin_email)

    def tasks():
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select (select count(*) from sync.agency_tasks where partition = %s),"
                        " (select count(*) from sync.tasks where partition = %s)", (f"agency={key}", f"team={team_id}"))
            return cur.fetchone()

    before = tasks()
    for bad in ({"title": ""}, {"title": "x" * 201}, {"title": "t", "lon": "nan", "lat": "0"},
                {"title": "t", "lon": "inf", "lat": "0"}, {"title": "t", "lon": "500", "lat": "0"},
                {"title": "t", "lon": "9", "lat": "-91"}, {"title": "t", "dueDate": "2026-13-45x"},
                {"title": "t", "description": "x" * 70_000}):
        r = post(admin, f"/teams/{team_id}/tasks", bad)
        assert 400 <= r.status_code < 500, (bad.keys(), r.status_code)
    assert tasks() == before
    assert post(admin, f"/teams/{team_id}/tasks", {"title": "t", "lon": "9.5", "lat": "0.5"}).status_code == 303
    assert tasks() == (before[0] + 1, before[1] + 1)
