"""Dashboards (issue 8) against a small hand-made fixture with known answers: a fresh
agency with two officers (and a third on duty right now), reports and duty changes
inserted directly, and a second agency whose data must never be counted on the first's
dashboards. Every number on the pages is checked; the charts' SVG is parsed and its marks
counted; the pages are looked at in headless Chromium (screenshots in the test state)."""
import datetime as dt
import html
import json
import re
import uuid
import xml.etree.ElementTree as ET

import pytest

from browser_support import HAVE_CHROMIUM, NO_CHROMIUM, chromium, shot
from conftest import PASSWORD, URL, admin_db, fold_summaries, new_user, session
from synclib import new_agency

FROM, TO = "2026-01-01", "2026-03-31"
RANGE = f"?from={FROM}&to={TO}"


def report_doc(rid, officer, date, violations=(), level="Green", catch=(), location=None, draft=False):
    """A boarding report with the facts the dashboards count."""
    doc = {"_id": rid, "draft": draft, "timestamp": date, "date": date,
           "reportingOfficer": {"name": {"first": "T", "last": "O"}, "email": officer},
           "vessel": {"name": "Vessel " + rid[-4:], "homePort": "P", "nationality": "GA", "permitNumber": "1"},
           "inspection": {"actualCatch": [{"fish": f, "number": 1, "weight": w, "unit": u} for f, w, u in catch],
                          "summary": {"safetyLevel": {"level": level, "amberReason": ""},
                                      "violations": [{"disposition": d, "offence": {"code": c, "explanation": "x"}}
                                                     for d, c in violations]}}}
    if location:
        doc["location"] = list(location)
    return doc


def insert_report(cur, partition, officer, date, violations=(), level="Green", catch=(), location=None,
                  draft=False, deleted=False):
    rid = "dash-" + uuid.uuid4().hex[:12]
    doc = report_doc(rid, officer, date, violations, level, catch, location, draft)
    # A deleted report is a tombstone: no document at all.
    cur.execute("insert into sync.reports (id, partition, doc, seq, deleted) values (%s, %s, %s, app.tick(%s), %s)",
                (rid, partition, None if deleted else json.dumps(doc), partition, deleted))
    return rid


def insert_duty(cur, partition, email, date, status):
    doc = {"_id": str(uuid.uuid4()), "user": {"email": email}, "date": date, "status": status}
    cur.execute("insert into sync.duty_changes (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))",
                (doc["_id"], partition, json.dumps(doc), partition))


@pytest.fixture(scope="module")
def fixture():
    a, b = new_agency("Dash A"), new_agency("Dash B")
    pa, pb = "agency=" + a, "agency=" + b
    admin, o1, o2, o3 = new_user("agencyAdmin", a), new_user("officer", a), new_user("officer", a), new_user("officer", a)
    admin_b = new_user("agencyAdmin", b)
    on_since = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(hours=3)
    with admin_db() as conn, conn.cursor() as cur:
        ids = {
            "r1": insert_report(cur, pa, o1, "2026-01-05T10:00:00Z", [("Warning", "V1")], "Green",
                                [("Tuna", 100, "kg")], (9.1, -0.5)),
            # 220.462 lbs = 100 kg; the report's zone is +02:00 (still 20 January in UTC).
            "r2": insert_report(cur, pa, o1.upper(), "2026-01-20T09:00:00+02:00", [("Citation", "V2"), ("Warning", "V1")],
                                "Red", [("Tuna", 220.462, "lbs")], (9.3, -0.7)),
            # A violation entry without a disposition is not a violation: compliant.
            "r3": insert_report(cur, pa, o1, "2026-02-10T12:00:00Z", [("", "V3")], "Amber",
                                [("Shark", 50, "kg")], (9.2, -0.6)),
            "r4": insert_report(cur, pa, o2, "2026-03-15T23:59:00Z", [], "Green", [], (9.5, -0.2)),
        }
        # Not boardings of the range: after it, before it, a draft, a deleted one.
        insert_report(cur, pa, o2, "2026-04-01T00:00:00Z", [("Citation", "V9")], "Red", [("Cod", 999, "kg")], (9.0, -0.1))
        insert_report(cur, pa, o2, "2025-12-31T23:59:59Z", [("Citation", "V9")], "Red", [], (9.0, -0.1))
        insert_report(cur, pa, o1, "2026-01-10T10:00:00Z", [("Citation", "V9")], "Red", [], (9.0, -0.1), draft=True)
        insert_report(cur, pa, o1, "2026-01-11T10:00:00Z", [("Citation", "V9")], "Red", [], (9.0, -0.1), deleted=True)
        # Agency B: the same officer's address on a report and a patrol there (never counted for A).
        insert_report(cur, pb, o1, "2026-01-06T10:00:00Z", [("Citation", "V9")], "Red", [("Cod", 500, "kg")], (20.0, 10.0))
        insert_duty(cur, pb, o1, "2026-01-10T00:00:00Z", "On Duty")
        insert_duty(cur, pb, o1, "2026-01-11T00:00:00Z", "Off Duty")
        # o1: 20:00-04:00 across the range's start (4 h count), 10 h, then 36 h over two days
        # with a repeated On Duty that does not restart the interval: 50 h on 4 days.
        for date, status in [("2025-12-31T20:00:00Z", "On Duty"), ("2026-01-01T04:00:00Z", "Off Duty"),
                             ("2026-01-05T08:00:00Z", "On Duty"), ("2026-01-05T18:00:00Z", "Off Duty"),
                             ("2026-02-01T00:00:00Z", "On Duty"), ("2026-02-01T06:00:00Z", "On Duty"),
                             ("2026-02-02T12:00:00Z", "Off Duty")]:
            insert_duty(cur, pa, o1, date, status)
        # o2: an interval still open, begun 4 h before the range ends: clipped to 4 h.
        insert_duty(cur, pa, o2, "2026-03-31T20:00:00Z", "On Duty")
        # o3: on duty for the last three hours, still open: counts up to now.
        insert_duty(cur, pa, o3, on_since.strftime("%Y-%m-%dT%H:%M:%SZ"), "On Duty")
        cur.execute("""insert into sync.mpas (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))""",
                    ("mpa-" + uuid.uuid4().hex[:8], pa,
                     json.dumps({"name": "Reserve <A>", "coordinates": [[9.0, -1.0], [9.6, -1.0], [9.6, 0.0], [9.0, -1.0]]}), pa))
    # The job runner folds these into the daily summaries within a second; fold them now.
    fold_summaries(pa)
    fold_summaries(pb)
    return {"a": a, "b": b, "admin": admin, "admin_b": admin_b, "o1": o1, "o2": o2, "o3": o3,
            "ids": ids, "on_since": on_since}


def browser_for(email):
    s = session()
    page = s.get(URL + "/login")
    csrf = re.search(r'name="_csrf" value="([^"]*)"', page.text).group(1)
    r = s.post(URL + "/login", data={"email": email, "password": PASSWORD, "next": "/", "_csrf": html.unescape(csrf)},
               allow_redirects=False)
    assert r.status_code == 303, r.text
    return s


def page(email, path):
    r = browser_for(email).get(URL + path)
    assert r.status_code == 200, r.text[:500]
    return r.text


def tiles(text):
    return {html.unescape(k): html.unescape(v) for k, v in re.findall(r'data-tile="([^"]*)">([^<]*)<', text)}


def chart(text, chart_id):
    """The chart card's SVG (parsed) and its table rows."""
    section = text.split(f'id="chart-{chart_id}"', 1)[1].split("</section>", 1)[0]
    svg = re.search(r"<svg\b.*?</svg>", section, re.S).group(0)
    root = ET.fromstring(svg)
    rows = [[html.unescape(re.sub(r"<[^>]*>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", section.split("<tbody>", 1)[1])]
    return root, rows


def marks(root, css_class):
    return [e for e in root.iter() if css_class in (e.get("class") or "").split()]


def table_rows(text, table_class):
    body = text.split(f'<table class="{table_class}">', 1)[1].split("</table>", 1)[0]
    return [[html.unescape(re.sub(r"<[^>]*>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.split("<tbody>", 1)[1])]


def expected_weeks():
    start, end = dt.date.fromisoformat(FROM), dt.date.fromisoformat(TO)
    monday = start - dt.timedelta(days=start.weekday())
    weeks = []
    while monday <= end:
        weeks.append(monday.isoformat())
        monday += dt.timedelta(days=7)
    return weeks


def check_agency_a(text, fx):
    assert tiles(text) == {"Boardings": "4", "Violations": "3", "Warnings": "2", "Citations": "1",
                           "Compliance rate": "50.0%", "Hours on patrol": "54.0"}
    root, rows = chart(text, "weekly")
    weeks = expected_weeks()
    assert len(marks(root, "bar")) == len(weeks) == 14
    counts = {"2026-01-05": "1", "2026-01-19": "1", "2026-02-09": "1", "2026-03-09": "1"}
    assert rows == [[w, counts.get(w, "0")] for w in weeks]
    root, rows = chart(text, "compliance")
    assert len(marks(root, "point")) == 3
    assert rows == [["2026-01", "2", "0", "0.0%"], ["2026-02", "1", "1", "100.0%"], ["2026-03", "1", "1", "100.0%"]]
    root, rows = chart(text, "codes")
    assert len(marks(root, "bar")) == 2 and rows == [["V1", "2"], ["V2", "1"]]
    root, rows = chart(text, "catch")
    assert len(marks(root, "bar")) == 2 and rows == [["Tuna", "200.0"], ["Shark", "50.0"]]
    root, rows = chart(text, "safety")
    assert len(marks(root, "slice")) == 3 and rows == [["Green", "2"], ["Amber", "1"], ["Red", "1"]]
    root, rows = chart(text, "map")
    points = marks(root, "point")
    assert len(points) == 4 and not marks(root, "bin")
    hrefs = {a.get("href") for a in root.iter("{http://www.w3.org/2000/svg}a")}
    assert hrefs == {"/boardings/" + rid for rid in fx["ids"].values()}
    assert len(marks(root, "mpa")) == 1 and len(marks(root, "land")) == 1
    assert sorted(r[0] for r in rows) == sorted(fx["ids"].values())
    assert table_rows(text, "officers") == [[fx["o1"].lower(), "3", "3", "33.3%", "50.0"],
                                            [fx["o2"].lower(), "1", "0", "100.0%", "4.0"]]
    assert f'data-live-partition="agency={fx["a"]}"' in text
    assert "How is this computed?" in text


def test_agency_admin_home_counts_exactly_the_fixture(fixture):
    check_agency_a(page(fixture["admin"], "/" + RANGE), fixture)


def test_agency_dashboard_by_key_is_the_same_and_other_agencies_are_refused(fixture):
    key = fixture["a"].replace(" ", "%20")
    check_agency_a(page(fixture["admin"], f"/agencies/{key}/dashboard{RANGE}"), fixture)
    check_agency_a(page("admin@demo.tideway", f"/agencies/{key}/dashboard{RANGE}"), fixture)
    other = browser_for(fixture["admin"]).get(URL + "/agencies/" + fixture["b"].replace(" ", "%20") + "/dashboard")
    assert other.status_code == 403
    assert browser_for(fixture["admin"]).get(URL + "/agencies/no-such-agency/dashboard").status_code == 404
    # Agency B's own admin sees B's one boarding and nothing of A.
    b = page(fixture["admin_b"], "/" + RANGE)
    assert tiles(b)["Boardings"] == "1" and tiles(b)["Citations"] == "1" and tiles(b)["Hours on patrol"] == "24.0"


def test_officer_dashboard(fixture):
    text = page(fixture["o1"], "/" + RANGE)
    assert tiles(text) == {"Days on patrol": "4", "Hours on patrol": "50.0", "Boardings": "3", "Warnings": "2",
                           "Citations": "1", "Compliance rate": "33.3%"}
    recent = table_rows(text, "recent")
    assert [r[0] for r in recent] == ["2026-02-10 12:00", "2026-01-20 07:00", "2026-01-05 10:00"]
    assert [(r[2], r[3], r[4]) for r in recent] == [("0", "0", "Amber"), ("1", "1", "Red"), ("1", "0", "Green")]
    root, _ = chart(text, "map")
    assert len(marks(root, "point")) == 3
    # o2's open interval is cut at the range's end.
    o2 = tiles(page(fixture["o2"], "/" + RANGE))
    assert o2["Hours on patrol"] == "4.0" and o2["Days on patrol"] == "1" and o2["Boardings"] == "1"


def test_open_duty_interval_counts_up_to_now_in_the_default_range(fixture):
    before = dt.datetime.now(dt.timezone.utc)
    text = page(fixture["o3"], "/")
    after = dt.datetime.now(dt.timezone.utc)
    hours = float(tiles(text)["Hours on patrol"])
    low = (before - fixture["on_since"]).total_seconds() / 3600
    high = (after - fixture["on_since"]).total_seconds() / 3600
    assert round(low, 1) <= hours <= round(high, 1), (low, hours, high)
    days = 1 if fixture["on_since"].date() == after.date() else 2
    assert tiles(text)["Days on patrol"] == str(days) and tiles(text)["Boardings"] == "0"
    today = after.date()
    assert f'name="to" value="{today.isoformat()}"' in text


def test_global_dashboard_table_and_sorting(fixture):
    s = browser_for("admin@demo.tideway")
    text = s.get(URL + "/" + RANGE + "&sort=boardings").text
    rows = {r[0]: r[1:] for r in table_rows(text, "agencies")}
    assert rows[fixture["a"]] == ["4", "3", "2", "1", "50.0%", "boardings"]
    assert rows[fixture["b"]] == ["1", "1", "0", "1", "0.0%", "boardings"]
    order = [r[0] for r in table_rows(text, "agencies")]
    counts = [int(rows[name][0]) for name in order]
    assert counts == sorted(counts, reverse=True)
    key = fixture["a"].replace(" ", "+")
    assert f'href="/boardings?agency={key}"' in text or f'href="/boardings?agency={fixture["a"].replace(" ", "%20")}"' in text
    by_name = [r[0] for r in table_rows(s.get(URL + "/" + RANGE + "&sort=name").text, "agencies")]
    assert by_name == sorted(by_name, key=str)
    assert s.get(URL + "/?sort=evil").status_code == 400
    assert s.get(URL + "/?from=2026-02-30").status_code == 400
    assert s.get(URL + "/?from=2026-03-01&to=2026-02-01").status_code == 400


def test_dashboards_in_headless_chromium(fixture):
    if not HAVE_CHROMIUM:
        pytest.skip(NO_CHROMIUM)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chromium(1280, 900)
    try:
        wait = WebDriverWait(driver, 20)
        driver.get(URL + "/" + RANGE)
        wait.until(expected_conditions.url_contains("/login"))
        driver.find_element(By.NAME, "email").send_keys(fixture["admin"])
        driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]").click()
        wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".tiles")))
        driver.get(URL + "/" + RANGE)
        wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "svg.map")))
        # The charts are laid out with a real size (not collapsed).
        for svg in driver.find_elements(By.CSS_SELECTOR, "svg.chart"):
            assert svg.size["width"] > 200 and svg.size["height"] > 40
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, min(height + 100, 4000))
        shot(driver, "dashboard-agency-desktop")
        driver.set_window_size(390, 2400)
        driver.get(URL + "/" + RANGE)
        # No sideways scrolling on a phone.
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 400
        shot(driver, "dashboard-agency-phone")
        # The boardings list's map layer, on the phone too.
        driver.get(URL + "/boardings/map" + RANGE)
        wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "svg.map")))
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 400
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.map .point")) == 5  # the draft is on the list too
        shot(driver, "boardings-map-phone")
    finally:
        driver.quit()
