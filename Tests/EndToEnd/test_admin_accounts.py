"""Invitations, admin-started resets and the forgotten-password form: one-time links
stored only as hashes, spent by their first use, dead after their expiry; one's own
password change; escaping of what people type; the audit record of admin actions."""
import re
import uuid

from admin_support import GLOBAL_ADMIN, browser_as, link_in, post, sha256, token_of, user_row
from conftest import URL, admin_db, api, new_user, session
from test_web_session import form_fields

NEW_PASSWORD = "a-long-new-password"


def invite(admin, **fields):
    email = f"t-{uuid.uuid4().hex[:10]}@test.tideway"
    data = {"email": email, "role": "officer", "agency": "Gabon", "firstName": "Inez", "lastName": "Vited"}
    data.update(fields)
    r = post(admin, "/users", data)
    assert r.status_code == 200, r.text
    return email, link_in(r.text)


def set_password(link, password=NEW_PASSWORD):
    """Opens the link in a fresh browser and submits the form; answers the final response."""
    browser = session()
    r = browser.get(link)
    if r.status_code != 200:
        return r
    fields = form_fields(r.text)
    return browser.post(link, data={"_csrf": fields["_csrf"], "password": password, "confirm": password},
                        allow_redirects=False)


def can_sign_in(email, password):
    return api("POST", "/api/v1/auth/login", json={"email": email, "password": password}).status_code == 200


def test_invitation_link_sets_a_password_once_and_is_stored_only_as_a_hash():
    admin = browser_as(GLOBAL_ADMIN)
    email, link = invite(admin)
    token = token_of(link)
    row = user_row(email)
    assert row["password_hash"] is None and row["agency"] == "Gabon"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select hash, purpose, expires_at - created_at from app.account_links where user_id = %s", (row["id"],))
        links = cur.fetchall()
        cur.execute("select count(*) from app.account_links where position(%s in hash::text || purpose) > 0", (token,))
        assert cur.fetchone()[0] == 0
    assert [(bytes(h), p) for h, p, _ in links] == [(sha256(token), "invite")]
    assert links[0][2].total_seconds() == 72 * 3600
    assert not can_sign_in(email, NEW_PASSWORD)
    r = set_password(link)
    assert r.status_code == 303 and r.headers["Location"].startswith("/login"), r.text
    assert can_sign_in(email, NEW_PASSWORD)
    # Spent: neither the page nor the form works a second time.
    assert session().get(link).status_code == 404
    assert set_password(link, "another-password-1").status_code == 404
    assert can_sign_in(email, NEW_PASSWORD) and not can_sign_in(email, "another-password-1")


def test_an_unknown_link_and_a_short_password_are_refused():
    assert session().get(URL + "/invite/not-a-real-token").status_code == 404
    admin = browser_as(GLOBAL_ADMIN)
    email, link = invite(admin)
    r = set_password(link, "short")
    assert r.status_code == 422 and "at least 10" in r.text
    # The refusal did not spend the link.
    assert set_password(link).status_code == 303


def test_the_link_form_needs_its_csrf_token():
    email, link = invite(browser_as(GLOBAL_ADMIN))
    browser = session()
    assert browser.get(link).status_code == 200
    for csrf in (None, "wrong"):
        data = {"password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
        if csrf:
            data["_csrf"] = csrf
        assert browser.post(link, data=data, allow_redirects=False).status_code == 403
    assert user_row(email)["password_hash"] is None


def test_expired_and_superseded_reset_links_do_not_work():
    email = new_user(agency="Gabon")
    user_id = user_row(email)["id"]
    gabon_admin = browser_as(new_user(role="agencyAdmin", agency="Gabon"))
    first = link_in(post(gabon_admin, f"/users/{user_id}/reset", {}).text)
    second = link_in(post(gabon_admin, f"/users/{user_id}/reset", {}).text)
    # Only the newest link is live.
    assert set_password(first).status_code == 404
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.account_links set expires_at = now() - interval '1 second' where hash = %s",
                    (sha256(token_of(second)),))
        assert cur.rowcount == 1
    assert session().get(second).status_code == 404
    assert set_password(second).status_code == 404
    assert can_sign_in(email, "tideway-demo")
    third = link_in(post(gabon_admin, f"/users/{user_id}/reset", {}).text)
    assert set_password(third).status_code == 303
    assert can_sign_in(email, NEW_PASSWORD) and not can_sign_in(email, "tideway-demo")


def test_a_reset_ends_the_users_open_sessions():
    email = new_user(agency="Gabon")
    victim = browser_as(email)
    assert victim.get(URL + "/account").status_code == 200
    admin = browser_as(GLOBAL_ADMIN)
    link = link_in(post(admin, f"/users/{user_row(email)['id']}/reset", {}).text)
    assert set_password(link).status_code == 303
    r = victim.get(URL + "/account", allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"].startswith("/login")


def test_forgotten_password_answers_alike_for_known_and_unknown_addresses():
    known = new_user(agency="Gabon")
    unknown = f"nobody-{uuid.uuid4().hex[:8]}@test.tideway"

    def ask(email):
        browser = session()
        fields = form_fields(browser.get(URL + "/forgot").text)
        r = browser.post(URL + "/forgot", data={"_csrf": fields["_csrf"], "email": email}, allow_redirects=False)
        return r.status_code, re.sub(r'name="_csrf" value="[^"]*"', "", r.text)

    assert ask(known) == ask(unknown)
    status, text = ask(known)
    assert status == 200 and "If an account uses that address" in text
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.account_links l join app.users u on u.id = l.user_id "
                    "where u.email = %s and l.purpose = 'reset'", (known,))
        assert cur.fetchone()[0] >= 1
    browser = session()
    r = browser.post(URL + "/forgot", data={"email": known}, allow_redirects=False)
    assert r.status_code == 403


def test_changing_ones_password_needs_the_current_one():
    email = new_user(agency="Gabon")
    browser = browser_as(email)
    other_device = browser_as(email)
    r = post(browser, "/account/password", {"current": "wrong-password", "password": NEW_PASSWORD, "confirm": NEW_PASSWORD})
    assert r.status_code == 422 and "current password" in r.text
    assert can_sign_in(email, "tideway-demo")
    r = post(browser, "/account/password", {"current": "tideway-demo", "password": NEW_PASSWORD, "confirm": NEW_PASSWORD})
    assert r.status_code == 303
    assert can_sign_in(email, NEW_PASSWORD) and not can_sign_in(email, "tideway-demo")
    # This browser stays signed in; the other one is signed out.
    assert browser.get(URL + "/account", allow_redirects=False).status_code == 200
    assert other_device.get(URL + "/account", allow_redirects=False).status_code == 303


def test_what_people_type_is_escaped_everywhere():
    admin = browser_as(GLOBAL_ADMIN)
    evil = "<script>alert(1)</script>"
    email, _ = invite(admin, firstName=evil, lastName='"><img src=x onerror=alert(2)>')
    user_id = user_row(email)["id"]
    for path in ["/users?q=" + email, "/users/" + user_id]:
        page = admin.get(URL + path).text
        assert "<script>alert(1)" not in page and "<img src=x" not in page, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, path
    r = post(admin, "/agencies/Gabon/areas", {"name": evil, "coordinates": "9 -1\n10 -1\n10 0"})
    assert r.status_code == 303, r.text
    page = admin.get(URL + "/agencies/Gabon").text
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page


def test_admin_actions_are_audited_with_who_what_and_where():
    admin_email = new_user(role="agencyAdmin", agency="Gabon")
    gabon_admin = browser_as(admin_email)
    officer = new_user(agency="Gabon")
    officer_id = user_row(officer)["id"]
    assert post(gabon_admin, f"/users/{officer_id}/active", {"active": "false"}).status_code == 303
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select actor::text, actor_email, action, address from app.audit_log where target = %s order by id",
                    ("user:" + officer_id,))
        rows = cur.fetchall()
    assert rows == [(user_row(admin_email)["id"], admin_email, "user.deactivate", "127.0.0.1")]
    page = browser_as(GLOBAL_ADMIN).get(URL + "/audit", params={"q": officer_id}).text
    assert "user.deactivate" in page and admin_email in page
