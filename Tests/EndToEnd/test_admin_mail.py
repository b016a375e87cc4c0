"""Mailed account links (the test stack mails through a sink, see mail_support): an
invitation's and a reset's link arrive by mail and work; /forgot mails known addresses
only and answers alike; nothing a person types can add a header or a recipient; the
link never reaches the log while mail is configured; a relay that is down leaves the
admin with the link and a clear message. And /forgot's rate limit."""
import os
import re
import time
import uuid

import pytest

from admin_support import GLOBAL_ADMIN, browser_as, link_in, post, token_of, user_row
from conftest import URL, admin_db, login_failures_taken_back, new_user, session
from mail_support import MAIL_DIR, all_mail, mail_to, wait_for_mail, worker_logs
from test_admin_accounts import NEW_PASSWORD, can_sign_in, set_password
from test_web_session import form_fields

REQUIRED_HEADERS = ["From", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type"]


@pytest.fixture(autouse=True)
def forgot_counts_cleared():
    """Every /forgot counts against 127.0.0.1, like all the others."""
    with login_failures_taken_back("forgot-%"):
        yield


@pytest.fixture
def relay_down():
    """The sink answers 421 to every connection while the file exists."""
    path = os.path.join(MAIL_DIR, "refuse")
    open(path, "w").close()
    yield
    os.remove(path)


def fresh_email(prefix="t"):
    return f"{prefix}-{uuid.uuid4().hex[:10]}@test.tideway"


def forgot(email, browser=None):
    browser = browser or session()
    fields = form_fields(browser.get(URL + "/forgot").text)
    r = browser.post(URL + "/forgot", data={"_csrf": fields["_csrf"], "email": email}, allow_redirects=False)
    return r.status_code, re.sub(r'name="_csrf" value="[^"]*"', "", r.text)


def outcome_of(page):
    match = re.search(r'id="mail-outcome">([^<]*)<', page)
    assert match, page
    return match.group(1)


def check_well_formed(mail, to_address):
    assert all(name in mail.message for name in REQUIRED_HEADERS), mail.header_block
    assert mail.message["Content-Type"].content_type == "text/plain"
    assert mail.message["Content-Type"].params.get("charset") == "utf-8"
    assert mail.recipients == [f"<{to_address}>"]
    # CRLF everywhere: no bare LF, no bare CR.
    assert b"\n" not in mail.raw.replace(b"\r\n", b"") and b"\r" not in mail.raw.replace(b"\r\n", b"")
    assert mail.message["To"].addresses[0].addr_spec == to_address


def test_an_invitation_is_mailed_and_its_link_sets_the_password():
    admin = browser_as(GLOBAL_ADMIN)
    email = fresh_email()
    r = post(admin, "/users", {"email": email, "role": "officer", "agency": "Gabon", "firstName": "Zoë", "lastName": "Mailé"})
    assert r.status_code == 200, r.text
    assert outcome_of(r.text) == f"Sent by mail to {email}."
    shown = link_in(r.text)
    [mail] = wait_for_mail(email)
    check_well_formed(mail, email)
    assert mail.message["To"].addresses[0].display_name == "Zoë Mailé"
    assert mail.message["From"].addresses[0].addr_spec == "noreply@test.tideway"
    # The page's link and the mailed one are the same one-time link.
    assert mail.link == shown
    assert set_password(mail.link).status_code == 303
    assert can_sign_in(email, NEW_PASSWORD)
    assert set_password(mail.link, "another-password-1").status_code == 404
    assert token_of(mail.link) not in worker_logs()


def test_an_admin_started_reset_is_mailed():
    email = new_user(agency="Gabon")
    admin = browser_as(new_user(role="agencyAdmin", agency="Gabon"))
    r = post(admin, f"/users/{user_row(email)['id']}/reset", {})
    assert r.status_code == 200 and outcome_of(r.text) == f"Sent by mail to {email}."
    [mail] = wait_for_mail(email)
    check_well_formed(mail, email)
    assert "administrator started a password reset" in mail.text
    assert set_password(mail.link).status_code == 303
    assert can_sign_in(email, NEW_PASSWORD) and not can_sign_in(email, "tideway-demo")


def test_forgot_mails_a_working_link_to_known_addresses_only():
    known = new_user(agency="Gabon")
    unknown = fresh_email("nobody")
    assert forgot(unknown) == forgot(known.upper())
    [mail] = wait_for_mail(known)
    check_well_formed(mail, known)
    assert "Someone asked for a new password" in mail.text
    # The link was never logged, and nothing was stored but its hash.
    token = token_of(mail.link)
    assert token not in worker_logs()
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.account_links where position(%s in hash::text || purpose) > 0", (token,))
        assert cur.fetchone()[0] == 0
    assert set_password(mail.link).status_code == 303
    assert can_sign_in(known, NEW_PASSWORD)
    assert set_password(mail.link, "another-password-1").status_code == 404
    # The unknown address was asked first; the known one's mail came, that one's never does.
    assert mail_to(unknown) == []


def test_names_cannot_add_headers_or_recipients():
    admin = browser_as(GLOBAL_ADMIN)
    email = fresh_email()
    evil = fresh_email("evil")
    r = post(admin, "/users", {"email": email, "role": "officer", "agency": "Gabon",
                               "firstName": f"Eve\r\nBcc: {evil}\r\n", "lastName": f"\nX-Evil: yes\r\n\r\nbody {evil}"})
    assert r.status_code == 200, r.text
    [mail] = wait_for_mail(email)
    check_well_formed(mail, email)
    assert "Bcc" not in mail.message and "X-Evil" not in mail.message
    assert b"\r\nBcc:" not in mail.header_block and b"\r\nX-Evil:" not in mail.header_block
    to = mail.message["To"]
    assert len(to.addresses) == 1 and to.addresses[0].addr_spec == email
    assert mail_to(evil) == []


def test_addresses_that_could_add_headers_or_recipients_are_refused():
    admin = browser_as(GLOBAL_ADMIN)
    evil = fresh_email("evil")
    for bad in [f"a-{uuid.uuid4().hex[:6]}@test.tideway\r\nBcc: {evil}", f"a-{uuid.uuid4().hex[:6]}\n@test.tideway"]:
        r = post(admin, "/users", {"email": bad, "role": "officer", "agency": "Gabon"})
        assert r.status_code == 422, r.text
    # One address, for the database; two, for a mail header: stored, but never mailed.
    odd = f"x,{evil}"
    r = post(admin, "/users", {"email": odd, "role": "officer", "agency": "Gabon"})
    assert r.status_code == 200, r.text
    assert "cannot be used in a mail" in outcome_of(r.text)
    assert link_in(r.text)
    status, _ = forgot(odd)
    assert status == 200
    assert mail_to(evil) == [] and not [m for m in all_mail() if evil in m.header_block.decode("utf-8", "replace")]


def test_a_relay_that_is_down_leaves_the_admin_the_link_and_a_clear_message(relay_down):
    email = new_user(agency="Gabon")
    user_id = user_row(email)["id"]
    admin = browser_as(GLOBAL_ADMIN)
    r = post(admin, f"/users/{user_id}/reset", {})
    assert r.status_code == 200, r.text
    outcome = outcome_of(r.text)
    assert outcome.startswith(f"Sending the mail to {email} failed") and "421" in outcome, outcome
    # The admin still has a working link.
    assert set_password(link_in(r.text)).status_code == 303
    assert can_sign_in(email, NEW_PASSWORD)
    # The form answers as ever; the failure is logged (without the link) by the queue.
    assert forgot(email) == forgot(fresh_email("nobody"))
    deadline = time.monotonic() + 30
    while f"mail not sent, reset link for user {user_id}" not in worker_logs():
        assert time.monotonic() < deadline, "no failure logged"
        time.sleep(0.1)
    assert mail_to(email) == []


def test_forgot_is_limited_per_email_alike_for_known_and_unknown_addresses():
    known = new_user(agency="Gabon")
    unknown = fresh_email("nobody")
    for address in (known, unknown):
        answers = [forgot(address) for _ in range(5)]
        assert all(status == 200 for status, _ in answers)
        status, page = forgot(address)
        assert status == 429 and "Too many requests" in page
    # Five requests, five mails; the refused ones sent nothing.
    assert len(wait_for_mail(known, count=5)) == 5
    # Another address from the same client is still served.
    assert forgot(fresh_email())[0] == 200


def test_forgot_is_limited_per_client_address():
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.login_failures where key = 'forgot-address:127.0.0.1' and at > now() - interval '1 hour'")
        already = cur.fetchone()[0]
        cur.execute("insert into app.login_failures (key) select 'forgot-address:127.0.0.1' from generate_series(1, %s)",
                    (19 - already,))
    assert forgot(fresh_email())[0] == 200
    status, page = forgot(fresh_email())
    assert status == 429 and "Too many requests" in page
