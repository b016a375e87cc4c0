"""The browser side: the sign-in page, the session cookie, CSRF, signing out, security
headers and the HTTP → HTTPS redirect, through the real nginx."""
import html
import os
import re
import urllib.parse

import pytest
import requests

from browser_support import HAVE_CHROMIUM, NO_CHROMIUM, chromium, shot
from conftest import PASSWORD, STATE, URL, admin_db, api, new_user, session

SECURITY_HEADERS = {
    "Strict-Transport-Security": lambda v: re.fullmatch(r"max-age=\d{7,}.*", v),
    "X-Content-Type-Options": lambda v: v == "nosniff",
    "X-Frame-Options": lambda v: v == "DENY",
    "Referrer-Policy": lambda v: v in ("same-origin", "strict-origin-when-cross-origin", "no-referrer"),
    "Content-Security-Policy": lambda v: "default-src 'self'" in v and "frame-ancestors 'none'" in v,
}


def form_fields(page):
    """name → value of every <input> of a page."""
    fields = {}
    for tag in re.findall(r"<input\b[^>]*>", page):
        name = re.search(r'\bname="([^"]*)"', tag)
        value = re.search(r'\bvalue="([^"]*)"', tag)
        if name:
            fields[name.group(1)] = html.unescape(value.group(1)) if value else ""
    return fields


def login_page(browser, path="/login"):
    r = browser.get(URL + path)
    assert r.status_code == 200, r.text
    return form_fields(r.text)


def sign_in(browser, email, password=PASSWORD, next_path=None, csrf=True):
    fields = login_page(browser)
    form = {"email": email, "password": password, "next": next_path or fields.get("next", "/")}
    if csrf is True:
        form["_csrf"] = fields["_csrf"]
    elif csrf:
        form["_csrf"] = csrf
    return browser.post(URL + "/login", data=form, allow_redirects=False)


def signed_in(email=None):
    """A browser session signed in as a fresh officer (or `email`)."""
    browser = session()
    email = email or new_user()
    r = sign_in(browser, email)
    assert r.status_code == 303, r.text
    return browser, email


def set_cookie_headers(response):
    return [v for k, v in response.raw.headers.items() if k.lower() == "set-cookie"]


def test_login_page_has_the_form():
    browser = session()
    r = browser.get(URL + "/login")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert r.headers.get("Cache-Control") == "no-store"
    fields = form_fields(r.text)
    assert {"email", "password", "_csrf"} <= set(fields)
    assert len(fields["_csrf"]) >= 32
    assert re.search(r'<form method="post" action="/login"', r.text)
    assert 'href="/static/tideway.css"' in r.text


def test_login_without_csrf_is_refused_without_a_session():
    browser = session()
    email = new_user()
    r = sign_in(browser, email, csrf=False)
    assert r.status_code == 403
    assert "tw_session" not in browser.cookies
    assert not any(c.startswith("tw_session=") for c in set_cookie_headers(r))


def test_login_with_a_wrong_csrf_token_is_refused():
    browser = session()
    email = new_user()
    r = sign_in(browser, email, csrf="A" * 43)
    assert r.status_code == 403 and "tw_session" not in browser.cookies
    # A token from another visitor's form does not fit this browser's pre-session.
    other = login_page(session())
    r = sign_in(browser, email, csrf=other["_csrf"])
    assert r.status_code == 403 and "tw_session" not in browser.cookies


def test_login_sets_a_strict_session_cookie_and_shows_the_user():
    browser = session()
    r = sign_in(browser, new_user())
    assert r.status_code == 303 and r.headers["Location"] == "/"
    cookie = next(c for c in set_cookie_headers(r) if c.startswith("tw_session="))
    attributes = {part.strip().split("=")[0].lower(): part.strip() for part in cookie.split(";")[1:]}
    assert {"httponly", "secure", "samesite", "path"} <= set(attributes)
    assert attributes["samesite"].lower() == "samesite=lax" and attributes["path"] == "Path=/"
    assert len(cookie.split(";")[0].split("=", 1)[1]) >= 32
    home = browser.get(URL + "/", allow_redirects=False)
    assert home.status_code == 200, home.text
    assert "Test Officer" in home.text and "Gabon" in home.text
    # The sign-out form in the layout carries the session's CSRF token.
    assert form_fields(home.text).get("_csrf")


def test_wrong_password_shows_the_form_again(own_address_failures):
    browser = session()
    email = new_user()
    r = sign_in(browser, email, password="wrong")
    assert r.status_code == 401 and "tw_session" not in browser.cookies
    assert "wrong email or password" in r.text.lower()
    assert {"email", "password", "_csrf"} <= set(form_fields(r.text))
    assert form_fields(r.text)["email"] == email


def test_signed_out_visitor_is_sent_to_login_with_next():
    r = session().get(URL + "/", allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"] == "/login?next=%2F"
    r = session().get(URL + "/logout", allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"].startswith("/login?next=")


@pytest.mark.parametrize("target", ["//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:alert(1)",
                                    "evil.example"])
def test_next_never_leaves_the_site(target):
    browser = session()
    fields = login_page(browser, "/login?next=" + urllib.parse.quote(target, safe=""))
    assert fields["next"] == "/"
    r = sign_in(session(), new_user(), next_path=target)
    assert r.status_code == 303 and r.headers["Location"] == "/"


def test_next_keeps_a_local_path():
    browser = session()
    fields = login_page(browser, "/login?next=%2Flogout")
    assert fields["next"] == "/logout"
    r = sign_in(browser, new_user(), next_path="/logout")
    assert r.status_code == 303 and r.headers["Location"] == "/logout"


def test_logout_needs_csrf_and_ends_the_session():
    browser, _ = signed_in()
    home = browser.get(URL + "/", allow_redirects=False)
    csrf = form_fields(home.text)["_csrf"]
    # Without the token (a cross-site form) nothing happens.
    r = browser.post(URL + "/logout", data={"next": "/"}, allow_redirects=False)
    assert r.status_code == 403
    r = browser.post(URL + "/logout", data={"_csrf": "A" * 43}, allow_redirects=False)
    assert r.status_code == 403
    assert browser.get(URL + "/", allow_redirects=False).status_code == 200
    old_cookie = browser.cookies["tw_session"]
    r = browser.post(URL + "/logout", data={"_csrf": csrf}, allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"] == "/login"
    assert any(c.startswith("tw_session=;") and "Max-Age=0" in c for c in set_cookie_headers(r))
    # The old cookie, replayed, no longer opens anything.
    replay = session()
    replay.cookies.set("tw_session", old_cookie, domain="localhost", path="/")
    r = replay.get(URL + "/", allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"].startswith("/login")


def test_deactivation_ends_the_browser_session():
    browser, email = signed_in()
    assert browser.get(URL + "/", allow_redirects=False).status_code == 200
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set active = false where email = %s", (email,))
    r = browser.get(URL + "/", allow_redirects=False)
    assert r.status_code == 303 and r.headers["Location"].startswith("/login")


def test_a_session_cookie_is_not_an_api_token():
    browser, _ = signed_in()
    cookie = browser.cookies["tw_session"]
    assert api("GET", "/api/v1/me", token=cookie).status_code == 401


def test_form_body_over_the_sign_in_limit_is_413_from_the_worker():
    """nginx lets 16 MiB through; the sign-in form itself takes at most 16 KiB."""
    browser = session()
    fields = login_page(browser)
    r = browser.post(URL + "/login", data={"_csrf": fields["_csrf"], "email": "a@b.c", "password": "x" * 20000},
                     allow_redirects=False)
    assert r.status_code == 413 and r.headers["Content-Type"].startswith("text/html")
    assert "tw_session" not in browser.cookies


@pytest.mark.parametrize("path", ["/login", "/", "/static/tideway.css", "/healthz", "/api/v1/me",
                                  "/api/v1/no-such-thing", "/no-such-page", "/static/no-such-file.css"])
def test_security_headers_everywhere(path):
    r = session().get(URL + path, allow_redirects=False)
    for name, ok in SECURITY_HEADERS.items():
        assert name in r.headers and ok(r.headers[name]), (path, r.status_code, name, r.headers.get(name))


def test_security_headers_on_nginx_own_errors():
    r = api("POST", "/api/v1/auth/login", data=b"x" * (17 * 1024 * 1024), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    for name, ok in SECURITY_HEADERS.items():
        assert name in r.headers and ok(r.headers[name]), (name, r.headers.get(name))


def test_static_files_are_cached():
    r = session().get(URL + "/static/tideway.css")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/css")
    assert "max-age=" in r.headers.get("Cache-Control", "")


def test_plain_http_redirects_to_https():
    https = urllib.parse.urlsplit(URL)
    http_port = int(os.environ.get("TIDEWAY_TEST_HTTP_PORT") or http_port_of_stack())
    r = requests.get(f"http://{https.hostname}:{http_port}/login?next=%2F", allow_redirects=False, timeout=10)
    assert r.status_code == 301
    assert r.headers["Location"] == f"{URL}/login?next=%2F"
    # nothing but the redirect is served over plain HTTP
    r = requests.post(f"http://{https.hostname}:{http_port}/api/v1/auth/login", json={}, allow_redirects=False,
                      timeout=10)
    assert r.status_code == 301


def http_port_of_stack():
    """The plain-HTTP port, read from the stack's rendered nginx config."""
    with open(os.path.join(STATE, "nginx", "tideway.conf")) as f:
        conf = f.read()
    server = conf.split("server {")[1]
    # "listen 127.0.0.1:8180;", or "... reuseport;" when several nginx instances share it.
    return re.search(r"listen\s+\S*?:(\d+)[\s;]", server).group(1)


def test_real_browser_signs_in_and_out():
    """One real headless Chromium: the form, the cookie and the redirect as a browser
    sees them, and a screenshot of the signed-in home page."""
    if not HAVE_CHROMIUM:
        pytest.skip(NO_CHROMIUM)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    email = new_user()
    driver = chromium(1200, 800)
    try:
        wait = WebDriverWait(driver, 20)
        driver.get(URL + "/")
        wait.until(expected_conditions.url_contains("/login"))
        driver.find_element(By.NAME, "email").send_keys(email)
        driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait.until(expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Welcome"))
        assert driver.current_url.rstrip("/") == URL
        assert "Test Officer" in driver.find_element(By.TAG_NAME, "main").text
        cookie = driver.get_cookie("tw_session")
        assert cookie and cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Lax"
        # Scripts cannot read the session cookie.
        assert "tw_session" not in driver.execute_script("return document.cookie")
        shot(driver, "home-signed-in")
        driver.find_element(By.CSS_SELECTOR, ".who button[type=submit]").click()
        wait.until(expected_conditions.url_contains("/login"))
        assert driver.get_cookie("tw_session") is None
        driver.get(URL + "/")
        wait.until(expected_conditions.url_contains("/login"))
    finally:
        driver.quit()
