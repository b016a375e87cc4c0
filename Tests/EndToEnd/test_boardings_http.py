"""Issue 6 over HTTP: exports, agency isolation by URL, CSRF on every form, escaping,
concurrent edits (both values shown, the user chooses), keyset pages."""
import csv
import io
import json
import re
import uuid
from urllib.parse import unquote

import pytest

from boardings_support import form_fields, insert_report, report_doc, signed_in, stored
from conftest import URL, admin_db


def count(sql, *args):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


def csv_rows(response):
    assert response.status_code == 200, response.text[:500]
    assert response.headers["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.text)))


def test_csv_export_has_the_filtered_rows():
    tag = uuid.uuid4().hex[:6]
    ids = [insert_report(report_doc(f"Export {tag} {n}", notes=[{"note": "line, with \"quotes\"\nand a break"}]))
           for n in range(3)]
    s = signed_in("gabon.officer1@demo.tideway")
    rows = csv_rows(s.get(URL + "/boardings.csv", params={"q": f"export {tag}"}))
    assert sorted(r["id"] for r in rows) == sorted(ids)
    assert all(r["agency"] == "Gabon" and r["safety_level"] == "Green" and r["latitude"] == "-0.8" for r in rows)
    assert rows[0]["notes"] == "line, with \"quotes\"\nand a break"
    # A filter the whole agency has: the file has exactly the agency's matching reports.
    expected = count("select count(*) from sync.reports where partition = 'agency=Gabon' and not deleted "
                     "and doc #>> '{inspection,summary,safetyLevel,level}' = 'Red'")
    red = csv_rows(s.get(URL + "/boardings.csv", params={"safety": "Red"}))
    assert len(red) == expected > 0 and all(r["safety_level"] == "Red" for r in red)
    geo = s.get(URL + "/boardings.geojson", params={"q": f"export {tag}"})
    assert geo.status_code == 200
    features = json.loads(geo.text)["features"]
    assert sorted(f["id"] for f in features) == sorted(ids)
    assert features[0]["geometry"] == {"type": "Point", "coordinates": [9.3, -0.8]}


def test_list_counts_sorts_and_pages_without_gaps():
    s = signed_in("gabon.officer1@demo.tideway")
    total = count("select count(*) from sync.reports where partition = 'agency=Gabon' and not deleted and doc #>> "
                  "'{inspection,summary,safetyLevel,level}' = 'Amber'")
    seen = []
    url = URL + "/boardings?safety=Amber&sort=vessel&size=25"
    while url:
        page = s.get(url).text
        assert f"{total:,} reports" in page or (total == 1 and "1 report" in page)
        seen += re.findall(r'<td data-label="Date"><a href="/boardings/([^"]+)"', page)
        nxt = re.search(r'<a href="([^"]+)" rel="next">', page)
        url = URL + nxt.group(1).replace("&amp;", "&") if nxt else None
    assert len(seen) == len(set(seen)) == total


def test_another_agency_cannot_see_edit_or_export_by_url():
    vessel = "Secret " + uuid.uuid4().hex[:6]
    gabon_id = insert_report(report_doc(vessel))
    s = signed_in("wildaid.officer1@demo.tideway")
    for path in ["/boardings/" + gabon_id, "/boardings/" + gabon_id + "/edit", "/boardings/" + gabon_id + "/print"]:
        r = s.get(URL + path)
        assert r.status_code == 404 and vessel not in r.text
    # An agency filter in the URL is ignored for officers; the search finds nothing.
    listing = s.get(URL + "/boardings", params={"agency": "Gabon", "q": vessel}).text
    # (The search box echoes the words; the report itself must not be listed.)
    assert gabon_id not in listing and "No reports match" in listing
    assert "Gabon" not in {r["agency"] for r in csv_rows(s.get(URL + "/boardings.csv", params={"agency": "Gabon"}))}
    assert csv_rows(s.get(URL + "/boardings.csv", params={"q": vessel})) == []
    assert gabon_id not in s.get(URL + "/boardings.geojson", params={"agency": "Gabon", "q": vessel}).text
    # Posting an edit with a valid form of its own session still cannot reach the report.
    own = s.get(URL + "/boardings/new").text
    fields = form_fields(own)
    fields["/vessel/name"] = "Hijacked"
    r = s.post(URL + "/boardings/" + gabon_id + "/edit", data=fields)
    assert r.status_code == 404
    assert stored(gabon_id)[0]["vessel"]["name"] == vessel
    # A global admin sees every agency and can narrow to one.
    admin = signed_in("admin@demo.tideway")
    assert gabon_id in admin.get(URL + "/boardings", params={"agency": "Gabon", "q": vessel}).text
    assert gabon_id not in admin.get(URL + "/boardings", params={"agency": "WildAid", "q": vessel}).text


@pytest.mark.parametrize("token", [None, "forged-token"])
def test_every_form_refuses_a_missing_or_wrong_csrf_token(token):
    report_id = insert_report(report_doc("Csrf " + uuid.uuid4().hex[:6]))
    s = signed_in("gabon.officer1@demo.tideway")
    before = count("select count(*) from sync.reports")
    for path in ["/boardings/new", "/boardings/" + report_id + "/edit"]:
        fields = form_fields(s.get(URL + path).text)
        fields["/vessel/name"] = "Changed by a forged form"
        if token is None:
            del fields["_csrf"]
        else:
            fields["_csrf"] = token
        r = s.post(URL + path, data=fields, allow_redirects=False)
        assert r.status_code == 403
    assert count("select count(*) from sync.reports") == before
    assert stored(report_id)[0]["vessel"]["name"].startswith("Csrf ")


def test_a_script_in_a_vessel_name_is_escaped_everywhere():
    vessel = "<script>alert(1)</script>"
    report_id = insert_report(report_doc(vessel, captain="Escape " + uuid.uuid4().hex[:6]))
    s = signed_in("gabon.officer1@demo.tideway")
    for path in ["/boardings/" + report_id, "/boardings/" + report_id + "/edit", "/boardings/" + report_id + "/print",
                 "/boardings?q=alert"]:
        page = s.get(URL + path).text
        assert "<script>alert(1)</script>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_concurrent_edit_of_the_same_field_asks_which_value_to_keep():
    report_id = insert_report(report_doc("Concurrent " + uuid.uuid4().hex[:6]))
    alice = signed_in("gabon.officer1@demo.tideway")
    bob = signed_in("gabon.officer2@demo.tideway")
    alice_form = form_fields(alice.get(URL + f"/boardings/{report_id}/edit").text)
    bob_form = form_fields(bob.get(URL + f"/boardings/{report_id}/edit").text)

    bob_form["/captain/license"] = "BOB-LICENSE"
    bob_form["/crew/0/name"] = "Bob's crew"
    assert bob.post(URL + f"/boardings/{report_id}/edit", data=bob_form).status_code == 200

    alice_form["/captain/license"] = "ALICE-LICENSE"
    alice_form["/vessel/permitNumber"] = "ALICE-PERMIT"
    r = alice.post(URL + f"/boardings/{report_id}/edit", data=alice_form)
    assert r.status_code == 409
    assert "BOB-LICENSE" in r.text and "ALICE-LICENSE" in r.text
    doc, version, _ = stored(report_id)
    assert doc["captain"]["license"] == "BOB-LICENSE" and version == 2  # nothing overwritten yet

    # Saving again without choosing is refused too.
    again = form_fields(r.text)
    assert alice.post(URL + f"/boardings/{report_id}/edit", data=again).status_code == 409
    again["_choice:/captain/license"] = "theirs"
    r = alice.post(URL + f"/boardings/{report_id}/edit", data=again)
    assert r.status_code == 200 and "?saved=1" in r.url
    doc, version, _ = stored(report_id)
    # Bob's values stay (license chosen, crew untouched by Alice); Alice's permit is saved.
    assert doc["captain"]["license"] == "BOB-LICENSE" and doc["crew"][0]["name"] == "Bob's crew"
    assert doc["vessel"]["permitNumber"] == "ALICE-PERMIT" and version == 3


def test_a_different_field_changed_meanwhile_merges_without_asking():
    report_id = insert_report(report_doc("Merge " + uuid.uuid4().hex[:6]))
    alice = signed_in("gabon.officer1@demo.tideway")
    bob = signed_in("gabon.officer2@demo.tideway")
    alice_form = form_fields(alice.get(URL + f"/boardings/{report_id}/edit").text)
    bob_form = form_fields(bob.get(URL + f"/boardings/{report_id}/edit").text)
    bob_form["/captain/name"] = "Bob Captain"
    bob.post(URL + f"/boardings/{report_id}/edit", data=bob_form)
    alice_form["/vessel/permitNumber"] = "ALICE-2"
    r = alice.post(URL + f"/boardings/{report_id}/edit", data=alice_form)
    assert "?saved=1" in r.url
    doc, version, _ = stored(report_id)
    assert doc["captain"]["name"] == "Bob Captain" and doc["vessel"]["permitNumber"] == "ALICE-2" and version == 3


def test_global_admin_reads_but_cannot_file_or_edit():
    report_id = insert_report(report_doc("Admin view " + uuid.uuid4().hex[:6]))
    admin = signed_in("admin@demo.tideway")
    assert admin.get(URL + "/boardings/" + report_id).status_code == 200
    assert admin.get(URL + "/boardings/" + report_id + "/edit").status_code == 403
    assert admin.get(URL + "/boardings/new").status_code == 403



def pages(session, url, link):
    """Each page's report ids following the `link` (next or prev) links from `url`, and the
    last page's URL."""
    found = []
    while True:
        page = session.get(url).text
        found.append([unquote(i) for i in re.findall(r'<td data-label="Date"><a href="/boardings/([^"]+)"', page)])
        step = re.search(rf'<a href="([^"]+)" rel="{link}">', page)
        if not step:
            return found, url
        url = URL + step.group(1).replace("&amp;", "&")


@pytest.mark.parametrize("sort, column", [("safety", "safety_rank"), ("violations", "violation_count")])
def test_a_sort_with_many_ties_pages_forward_and_back_in_order(sort, column):
    """A page's keyset position is a key and an id: the key's remaining ties come first, then
    the keys beyond (BoardingFilter.pageQuery reads them as two index ranges)."""
    s = signed_in("gabon.officer1@demo.tideway")
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(f"select id, {column} from sync.reports where partition = 'agency=Gabon' and not deleted"
                    f" order by {column} desc, id desc")
        rows = cur.fetchall()
    assert len({key for _, key in rows}) * 10 < len(rows), "the sort's keys should have many ties"
    forward, last = pages(s, URL + f"/boardings?sort={sort}", "next")
    assert [i for page in forward for i in page] == [i for i, _ in rows]
    assert len(forward) > 3 and all(len(page) == 25 for page in forward[:-1])
    # From the last page back to the first by the "previous" links: the same pages.
    backward, _ = pages(s, last, "prev")
    assert backward == forward[::-1]
