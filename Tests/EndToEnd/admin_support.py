"""Helpers of the back-office administration tests: signed-in browser sessions (plain
HTTP clients that keep cookies), the CSRF token of a page, and reading the database."""
import hashlib
import html
import re

from conftest import URL, admin_db, session
from test_web_session import form_fields, sign_in

GLOBAL_ADMIN = "admin@demo.tideway"


def browser_as(email):
    """A cookie-keeping HTTP session signed in as `email` through the sign-in form."""
    browser = session()
    r = sign_in(browser, email)
    assert r.status_code == 303, r.text
    return browser


def csrf_of(browser, path="/account"):
    """The session's CSRF token, from a page every signed-in user may open."""
    r = browser.get(URL + path)
    assert r.status_code == 200, r.text
    return form_fields(r.text)["_csrf"]


def post(browser, path, data, csrf=True):
    """Posts a form; csrf=True sends the session's real token, a string sends that, None none."""
    data = dict(data)
    if csrf is True:
        data["_csrf"] = csrf_of(browser)
    elif csrf is not None:
        data["_csrf"] = csrf
    # Always a form, even an empty one: a body-less post would be a 415, not a CSRF refusal.
    return browser.post(URL + path, data=data, allow_redirects=False,
                        headers={"Content-Type": "application/x-www-form-urlencoded"})


def user_row(email):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id::text, role, agency, active, first_name, password_hash from app.users where lower(email) = lower(%s)",
                    (email,))
        row = cur.fetchone()
    if row is None:
        return None
    return dict(zip(["id", "role", "agency", "active", "first_name", "password_hash"], row))


def link_in(page):
    """The one-time link an admin page shows."""
    match = re.search(r'value="(https://[^"]*/invite/[^"]+)"', page)
    assert match, page
    return html.unescape(match.group(1))


def token_of(link):
    return link.rsplit("/", 1)[1]


def sha256(text):
    return hashlib.sha256(text.encode()).digest()


def menu_doc(agency):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id, doc from sync.menu_data where partition = %s and not deleted order by id limit 1",
                    ("agency=" + agency,))
        return cur.fetchone()
