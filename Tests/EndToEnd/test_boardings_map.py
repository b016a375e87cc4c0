"""`/boardings/map`, the boardings list's map layer: it draws exactly the reports the
list's filter matches (and only what the caller may read), with the agency's protected
areas; past 500 positions it bins them, and the bins add up to the count."""
import html
import json
import re
import uuid
import xml.etree.ElementTree as ET

import pytest

from conftest import URL, admin_db, new_user
from synclib import new_agency
from test_dashboards import browser_for

SVG_NS = "{http://www.w3.org/2000/svg}"


def insert(cur, partition, date, level="Green", location=(9.2, -0.6), draft=False, vessel="Map vessel"):
    rid = "map-" + uuid.uuid4().hex[:12]
    doc = {"_id": rid, "draft": draft, "timestamp": date, "date": date, "vessel": {"name": vessel},
           "inspection": {"summary": {"safetyLevel": {"level": level}}}}
    if location:
        doc["location"] = list(location)
    cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))",
                (rid, partition, json.dumps(doc), partition))
    return rid


@pytest.fixture(scope="module")
def agencies():
    a, b = new_agency("Map A"), new_agency("Map B")
    pa, pb = "agency=" + a, "agency=" + b
    with admin_db() as conn, conn.cursor() as cur:
        ids = {
            "green": insert(cur, pa, "2026-01-05T10:00:00Z", "Green", (9.1, -0.5)),
            "red": insert(cur, pa, "2026-01-06T10:00:00Z", "Red", (9.3, -0.7), vessel="Scarlet"),
            "draft": insert(cur, pa, "2026-01-07T10:00:00Z", "Amber", (9.4, -0.8), draft=True),
            "nowhere": insert(cur, pa, "2026-01-08T10:00:00Z", "Green", None),
            "later": insert(cur, pa, "2026-05-01T10:00:00Z", "Green", (9.5, -0.9)),
        }
        other = insert(cur, pb, "2026-01-05T10:00:00Z", "Red", (20.0, 10.0))
        cur.execute("insert into sync.mpas (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))",
                    ("mpa-" + uuid.uuid4().hex[:8], pa,
                     json.dumps({"name": "Reserve", "coordinates": [[9.0, -1.0], [9.6, -1.0], [9.6, 0.0], [9.0, -1.0]]}), pa))
    return {"a": a, "b": b, "admin": new_user("agencyAdmin", a), "admin_b": new_user("agencyAdmin", b),
            "ids": ids, "other": other}


def map_of(session, query):
    r = session.get(URL + "/boardings/map" + query)
    assert r.status_code == 200, r.text[:500]
    section = r.text.split('id="chart-map"', 1)[1].split("</section>", 1)[0]
    found = re.search(r"<svg\b.*?</svg>", section, re.S)
    root = ET.fromstring(found.group(0)) if found else None
    return r.text, root


def linked_ids(root):
    return {a.get("href").rsplit("/", 1)[1] for a in root.iter(SVG_NS + "a")}


def list_ids(session, query):
    text = session.get(URL + "/boardings" + query + "&size=100").text
    return set(re.findall(r'<td data-label="Date"><a href="/boardings/([^"]+)"', text))


def test_the_map_draws_what_the_list_matches(agencies):
    s = browser_for(agencies["admin"])
    ids = agencies["ids"]
    for query in ("?from=2026-01-01&to=2026-01-31", "?from=2026-01-01&to=2026-01-31&safety=Red",
                  "?q=scarlet", "?draft=yes", "?to=2026-12-31"):
        text, root = map_of(s, query)
        drawn = linked_ids(root)
        assert drawn == list_ids(s, query) - {ids["nowhere"]}, query
        assert len([e for e in root.iter() if "point" in (e.get("class") or "").split()]) == len(drawn)
    text, root = map_of(s, "?from=2026-01-01&to=2026-01-31")
    assert linked_ids(root) == {ids["green"], ids["red"], ids["draft"]}
    assert "4 reports match" in text and "1 without a position is not drawn" in text
    assert len([e for e in root.iter() if "mpa" in (e.get("class") or "").split()]) == 1
    # The filter's chips remove one filter at a time, staying on the map; the list links back.
    assert 'href="/boardings/map?to=2026-01-31"' in text
    assert 'href="/boardings?from=2026-01-01&amp;to=2026-01-31"' in text
    # The list offers the map of its current filter.
    listing = s.get(URL + "/boardings?safety=Red").text
    assert 'href="/boardings/map?safety=Red"' in listing


def test_another_agency_is_never_drawn(agencies):
    _, root = map_of(browser_for(agencies["admin_b"]), "?to=2026-12-31")
    assert linked_ids(root) == {agencies["other"]}
    # An agency filter from a non-global admin is ignored, as on the list.
    _, root = map_of(browser_for(agencies["admin_b"]), "?agency=" + agencies["a"].replace(" ", "+"))
    assert linked_ids(root) == {agencies["other"]}
    # A global admin narrowed to agency A sees A's reports and A's protected area.
    text, root = map_of(browser_for("admin@demo.tideway"), "?to=2026-12-31&agency=" + agencies["a"].replace(" ", "+"))
    assert linked_ids(root) == set(agencies["ids"].values()) - {agencies["ids"]["nowhere"]}
    assert len([e for e in root.iter() if "mpa" in (e.get("class") or "").split()]) == 1


def test_empty_results_say_so(agencies):
    # Agency A has a protected area: the map still shows it, with no boarding on it.
    text, root = map_of(browser_for(agencies["admin"]), "?q=nothing-matches-this")
    assert not linked_ids(root) and "No reports match this search and these filters." in text
    text, root = map_of(browser_for(agencies["admin"]), "?from=2026-01-08&to=2026-01-08")
    assert not linked_ids(root) and "None of the matching reports has a position." in text
    # Agency B has none: no map at all.
    text, root = map_of(browser_for(agencies["admin_b"]), "?q=nothing-matches-this")
    assert root is None and "No reports match this search and these filters." in text


def test_many_boardings_are_binned_and_the_bins_add_up():
    key = new_agency("Map many")
    p = "agency=" + key
    with admin_db() as conn, conn.cursor() as cur:
        for i in range(620):
            insert(cur, p, f"2026-02-{1 + i % 28:02d}T10:00:00Z", ["Green", "Amber", "Red"][i % 3],
                   (9 + (i % 31) / 30, -(i % 17) / 16))
    text, root = map_of(browser_for(new_user("agencyAdmin", key)), "?to=2026-12-31")
    assert "620 reports match" in text and "grouped on a grid" in text
    bins = [e for e in root.iter() if "bin" in (e.get("class") or "").split()]
    assert bins and not linked_ids(root)
    rows = re.findall(r"<tr><td>(\d+) boardings</td>", text)
    assert sum(int(n) for n in rows) == 620
