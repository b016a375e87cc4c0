"""The sync inspector: devices and rejected changes of the admin's own agency only, and
the answer to "why can't this user see document X" with the rule that decides."""
import html
import uuid

from admin_support import GLOBAL_ADMIN, browser_as, menu_doc
from conftest import URL, new_user
from synclib import Client


def text_of(page):
    return html.unescape(page)


def test_devices_and_rejections_show_for_the_users_agency_admins_only():
    officer_email = new_user(agency="Gabon")
    officer = Client(officer_email)
    client_id = "inspect-" + uuid.uuid4().hex[:8]
    menu_id = menu_doc("Gabon")[0]
    results = officer.push([{"changeId": "c1", "collection": "menuData", "partition": "agency=Gabon", "id": menu_id,
                             "op": "update", "patch": {"ports": ["Officer port"]}}], client_id=client_id)
    assert results[0]["status"] == "rejected" and results[0]["error"]["code"] == "forbidden"
    gabon_page = text_of(browser_as(new_user(role="agencyAdmin", agency="Gabon")).get(URL + "/sync").text)
    assert client_id in gabon_page and officer_email in gabon_page and "no write right" in gabon_page
    wildaid_page = browser_as(new_user(role="agencyAdmin", agency="WildAid")).get(URL + "/sync").text
    assert client_id not in wildaid_page and officer_email not in wildaid_page


def test_why_a_user_can_or_cannot_read_a_document():
    menu_id = menu_doc("Gabon")[0]
    gabon_officer = new_user(agency="Gabon")
    wildaid_officer = new_user(agency="WildAid")
    admin = browser_as(GLOBAL_ADMIN)
    page = text_of(admin.get(URL + "/sync", params={"user": gabon_officer, "doc": menu_id}).text)
    assert "Can read" in page and "members of an agency read its partition" in page
    page = text_of(admin.get(URL + "/sync", params={"user": wildaid_officer, "doc": menu_id}).text)
    assert "Cannot read" in page and "this user belongs to WildAid" in page and "agency=Gabon" in page
    # An agency admin asks only about their own people and their own partitions.
    gabon_admin = browser_as(new_user(role="agencyAdmin", agency="Gabon"))
    page = text_of(gabon_admin.get(URL + "/sync", params={"user": wildaid_officer, "doc": menu_id}).text)
    assert "No such user among the people you manage" in page and "Can read" not in page
    wildaid_menu = menu_doc("WildAid")[0]
    page = text_of(gabon_admin.get(URL + "/sync", params={"user": gabon_officer, "doc": wildaid_menu}).text)
    assert "No document with that id in a partition you may read" in page and "agency=WildAid" not in page
