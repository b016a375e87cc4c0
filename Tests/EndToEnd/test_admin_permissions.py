"""The permission matrix of the administration pages: officers are kept out of every
page and form, agency admins stay inside their agency and never make global admins
(even with a hand-made form post), and every form needs the session's CSRF token."""
import os
import uuid

import psycopg2
import pytest

from admin_support import GLOBAL_ADMIN, browser_as, csrf_of, menu_doc, post, user_row
from conftest import URL, admin_db, new_user

SOME_ID = "00000000-0000-4000-8000-000000000000"


def admin_forms(user_id, agency="Gabon", area_id="no-such-area"):
    """Every state-changing admin form, with a body that would otherwise be acceptable."""
    base = "/agencies/" + agency
    return [
        ("/users", {"email": f"t-{uuid.uuid4().hex[:10]}@test.tideway", "role": "officer", "agency": agency}),
        (f"/users/{user_id}", {"firstName": "Changed", "lastName": "By", "displayName": "Someone"}),
        (f"/users/{user_id}/active", {"active": "false"}),
        (f"/users/{user_id}/reset", {}),
        ("/agencies", {"key": "T" + uuid.uuid4().hex[:8], "name": "Test agency"}),
        (base, {"name": "Renamed", "active": "on"}),
        (base + "/menu", {"ports": "Evil port", "violations": "X1 | evil"}),
        (base + "/areas", {"name": "Evil area", "coordinates": "0 0\n1 0\n1 1"}),
        (f"{base}/areas/{area_id}", {"name": "Renamed area"}),
        (f"{base}/areas/{area_id}/delete", {}),
    ]


ADMIN_PAGES = ["/users", "/users/" + SOME_ID, "/agencies", "/agencies/Gabon", "/audit", "/sync"]


def test_officers_get_403_on_every_admin_page_and_form():
    officer = browser_as(new_user())
    victim = new_user()
    victim_id = user_row(victim)["id"]
    menu_before = menu_doc("Gabon")
    for path in ADMIN_PAGES + ["/users/" + victim_id]:
        r = officer.get(URL + path, allow_redirects=False)
        assert r.status_code == 403, (path, r.status_code)
    for path, data in admin_forms(victim_id):
        r = post(officer, path, data)
        assert r.status_code == 403, (path, r.status_code, r.text[:300])
    after = user_row(victim)
    assert after["active"] and after["first_name"] == "Test"
    assert menu_doc("Gabon") == menu_before


def test_every_admin_form_refuses_a_missing_or_wrong_csrf_token():
    admin = browser_as(GLOBAL_ADMIN)
    victim = new_user()
    victim_id = user_row(victim)["id"]
    menu_before = menu_doc("Gabon")
    forms = admin_forms(victim_id) + [
        ("/account", {"firstName": "X"}),
        ("/account/password", {"current": "tideway-demo", "password": "0123456789ab", "confirm": "0123456789ab"}),
    ]
    someone_elses = csrf_of(browser_as(new_user()))
    for path, data in forms:
        for csrf in (None, "wrong-token", someone_elses):
            r = post(admin, path, data, csrf=csrf)
            assert r.status_code == 403, (path, csrf, r.status_code)
            assert "form expired" in r.text
    assert user_row(forms[0][1]["email"]) is None
    assert user_row(victim)["active"] and user_row(victim)["first_name"] == "Test"
    assert menu_doc("Gabon") == menu_before


def test_agency_admins_cannot_touch_another_agencys_users_lists_or_areas():
    gabon_admin = browser_as(new_user(role="agencyAdmin", agency="Gabon"))
    outsider = new_user(agency="WildAid")
    outsider_id = user_row(outsider)["id"]
    r = gabon_admin.get(URL + "/users", params={"q": outsider})
    assert r.status_code == 200 and outsider not in r.text.split("<tbody>")[1]
    r = gabon_admin.get(URL + "/users", params={"agency": "WildAid"})
    assert r.status_code == 200 and "@demo.tideway" not in r.text.split("<tbody>")[1].split("</tbody>")[0]
    assert gabon_admin.get(URL + "/users/" + outsider_id).status_code == 404
    assert gabon_admin.get(URL + "/agencies/WildAid").status_code == 403
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id from sync.mpas where partition = 'agency=WildAid' and not deleted limit 1")
        area = cur.fetchone()
    menu_before = menu_doc("WildAid")
    for path, data in admin_forms(outsider_id, agency="WildAid", area_id=area[0] if area else "x"):
        if path in ("/users", "/agencies", "/agencies/WildAid"):
            continue
        r = post(gabon_admin, path, data)
        assert r.status_code in (403, 404), (path, r.status_code)
    # Inviting into another agency, and creating an agency, are refused too (renaming one's
    # own: see test_agency_admins_edit_only_their_own_agencys_contact_details).
    r = post(gabon_admin, "/users", {"email": f"t-{uuid.uuid4().hex[:8]}@test.tideway", "role": "officer", "agency": "WildAid"})
    assert r.status_code == 403
    assert post(gabon_admin, "/agencies", {"key": "Mine", "name": "Mine"}).status_code == 403
    row = user_row(outsider)
    assert row["active"] and row["first_name"] == "Test" and row["agency"] == "WildAid"
    assert menu_doc("WildAid") == menu_before
    if area:
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select deleted from sync.mpas where id = %s", (area[0],))
            assert cur.fetchone()[0] is False


def test_agency_admins_never_make_global_admins_even_by_crafted_posts():
    admin_email = new_user(role="agencyAdmin", agency="Gabon")
    gabon_admin = browser_as(admin_email)
    officer = new_user(agency="Gabon")
    officer_id = user_row(officer)["id"]
    own_id = user_row(admin_email)["id"]
    r = post(gabon_admin, f"/users/{officer_id}", {"firstName": "A", "lastName": "B", "displayName": "", "role": "globalAdmin"})
    assert r.status_code == 403
    r = post(gabon_admin, f"/users/{officer_id}", {"firstName": "A", "lastName": "B", "displayName": "", "agency": ""})
    assert r.status_code == 403
    r = post(gabon_admin, f"/users/{own_id}", {"firstName": "A", "lastName": "B", "displayName": "", "role": "globalAdmin"})
    assert r.status_code == 403
    email = f"t-{uuid.uuid4().hex[:10]}@test.tideway"
    r = post(gabon_admin, "/users", {"email": email, "role": "globalAdmin", "agency": "Gabon"})
    assert r.status_code == 403
    assert user_row(email) is None
    assert user_row(officer)["role"] == "officer" and user_row(admin_email)["role"] == "agencyAdmin"
    # A global admin is out of an agency admin's reach altogether.
    global_id = user_row(GLOBAL_ADMIN)["id"]
    assert gabon_admin.get(URL + "/users/" + global_id).status_code == 404
    assert post(gabon_admin, f"/users/{global_id}/active", {"active": "false"}).status_code == 404
    assert user_row(GLOBAL_ADMIN)["active"]
    # What they may do works: their own agency's officer, renamed and made an agency admin.
    r = post(gabon_admin, f"/users/{officer_id}", {"firstName": "Ana", "lastName": "B", "displayName": "", "role": "agencyAdmin"})
    assert r.status_code == 303, r.text
    assert user_row(officer)["role"] == "agencyAdmin" and user_row(officer)["first_name"] == "Ana"


def test_nobody_changes_their_own_role_or_agency():
    admin = browser_as(GLOBAL_ADMIN)
    own_id = user_row(GLOBAL_ADMIN)["id"]
    r = post(admin, f"/users/{own_id}", {"firstName": "", "lastName": "", "displayName": "Admin", "role": "officer"})
    assert r.status_code == 403
    assert user_row(GLOBAL_ADMIN)["role"] == "globalAdmin"
    assert post(admin, f"/users/{own_id}/active", {"active": "false"}).status_code == 422
    assert user_row(GLOBAL_ADMIN)["active"]


@pytest.mark.parametrize("path", ["/audit"])
def test_only_global_admins_browse_the_audit_log(path):
    gabon_admin = browser_as(new_user(role="agencyAdmin", agency="Gabon"))
    assert gabon_admin.get(URL + path).status_code == 403
    assert browser_as(GLOBAL_ADMIN).get(URL + path).status_code == 200


def agency_row(key):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select name, description, email, site, active from app.agencies where key = %s", (key,))
        return cur.fetchone()


def test_agency_admins_edit_only_their_own_agencys_contact_details():
    key = "T " + uuid.uuid4().hex[:8]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("insert into app.agencies (key, name) values (%s, 'Original name')", (key,))
    admin = browser_as(new_user(role="agencyAdmin", agency=key))
    path = "/agencies/" + key.replace(" ", "%20")
    page = admin.get(URL + path).text
    assert "Save contact details" in page and "Save agency" not in page and 'name="active"' not in page
    # The contact details change; a crafted name and state are ignored.
    r = post(admin, path, {"description": "Coast guard <b>north</b>", "email": "ops@example.org", "site": "https://example.org",
                           "name": "Hijacked", "active": ""})
    assert r.status_code == 303
    assert agency_row(key) == ("Original name", "Coast guard <b>north</b>", "ops@example.org", "https://example.org", True)
    assert "Coast guard &lt;b&gt;north&lt;/b&gt;" in admin.get(URL + path).text
    # Another agency, or an officer: refused, nothing changes.
    assert post(admin, "/agencies/Gabon", {"description": "x"}).status_code == 403
    officer = browser_as(new_user(agency=key))
    assert post(officer, path, {"description": "officer was here"}).status_code == 403
    assert agency_row(key)[1] == "Coast guard <b>north</b>"
    # The database itself refuses an agency admin's rename, whatever sends it.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id from app.users where agency = %s and role = 'agencyAdmin'", (key,))
        uid = str(cur.fetchone()[0])
    with psycopg2.connect(os.environ["TIDEWAY_TEST_DATABASE"]) as conn, conn.cursor() as cur:
        cur.execute("select set_config('tideway.role', 'agencyAdmin', true), set_config('tideway.agency', %s, true),"
                    " set_config('tideway.user_id', %s, true)", (key, uid))
        with pytest.raises(psycopg2.Error) as refused:
            cur.execute("update app.agencies set name = 'Hijacked' where key = %s", (key,))
        assert refused.value.pgcode == "TW403"
        conn.rollback()
        cur.execute("select set_config('tideway.role', 'agencyAdmin', true), set_config('tideway.agency', %s, true),"
                    " set_config('tideway.user_id', %s, true)", (key, uid))
        cur.execute("update app.agencies set description = 'x' where key = 'Gabon'")
        assert cur.rowcount == 0
    assert agency_row(key)[0] == "Original name"
    # A global admin still edits everything.
    r = post(browser_as(GLOBAL_ADMIN), path, {"name": "New name", "description": "d", "email": "", "site": "", "active": ""})
    assert r.status_code == 303 and agency_row(key) == ("New name", "d", "", "", False)
