"""Issue 6 in a real browser (headless Chromium through Selenium): sign in, search, filter,
open a report, edit it (two fields, a crew member and a violation added), see the change
and its history entry; create a report. Screenshots go to $TIDEWAY_TEST_STATE/screenshots."""
import os
import uuid

import pytest
from selenium.common.exceptions import NoAlertPresentException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from boardings_support import history_exists, insert_report, report_doc, stored
from browser_support import chromium, screenshot_dir
from conftest import PASSWORD, URL


@pytest.fixture(scope="module")
def browser():
    driver = chromium(1280, 1000)
    driver.implicitly_wait(2)
    yield driver
    driver.quit()


def click_and_wait(driver, element):
    """Clicks a button that submits a form and waits until the next page replaced this one
    (a click does not wait for the navigation it starts, and a re-rendered form keeps its URL)."""
    page = driver.find_element(By.TAG_NAME, "html")
    element.click()

    def replaced(_):
        # Chromium reports a node of the page that went as "does not belong to the
        # document" (a WebDriverException) as often as a stale element.
        try:
            page.is_enabled()
            return False
        except WebDriverException:
            return True

    WebDriverWait(driver, 20).until(replaced)
    # ...and until the next page has loaded, so that what is found next belongs to it.
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")


def shot(driver, name, width=1280):
    driver.set_window_size(width, 1000)
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(width, min(max(height, 600), 4000))
    driver.save_screenshot(os.path.join(screenshot_dir(), f"boardings-{name}.png"))
    driver.set_window_size(1280, 1000)


def sign_in(driver, email):
    driver.delete_all_cookies()
    driver.get(URL + "/login")
    driver.find_element(By.NAME, "email").send_keys(email)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    click_and_wait(driver, driver.find_element(By.CSS_SELECTOR, "form button[type=submit]"))
    # A click does not wait for the navigation it starts.
    WebDriverWait(driver, 20).until(lambda d: "/login" not in d.current_url)


def field(driver, pointer):
    return driver.find_element(By.NAME, pointer)


def test_search_filter_open_edit_and_see_the_change(browser):
    vessel = "Brisa " + uuid.uuid4().hex[:6]
    report_id = insert_report(report_doc(vessel, captain="Émile Ndong"))
    sign_in(browser, "gabon.officer1@demo.tideway")

    # Search: accents and case do not matter.
    browser.get(URL + "/boardings")
    browser.find_element(By.CSS_SELECTOR, "details.filters summary").click()
    box = browser.find_element(By.ID, "f-q")
    box.send_keys(vessel.upper().replace("BRISA", "brisa") + " emile")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, ".filter-form button[type=submit]"))
    WebDriverWait(browser, 20).until(lambda b: "q=" in b.current_url)
    rows = browser.find_elements(By.CSS_SELECTOR, "table.boardings tbody tr")
    assert len(rows) == 1 and vessel in rows[0].text
    shot(browser, "list-search")

    # Filter: safety level Green keeps it, Red drops it; the state is in the URL.
    Select(browser.find_element(By.ID, "f-safety")).select_by_value("Red")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, ".filter-form button[type=submit]"))
    WebDriverWait(browser, 20).until(lambda b: "safety=Red" in b.current_url)
    assert browser.find_elements(By.CSS_SELECTOR, "table.boardings tbody tr") == []
    assert "No reports match" in browser.page_source
    Select(browser.find_element(By.ID, "f-safety")).select_by_value("Green")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, ".filter-form button[type=submit]"))
    rows = browser.find_elements(By.CSS_SELECTOR, "table.boardings tbody tr")
    assert len(rows) == 1

    # Open it.
    click_and_wait(browser, rows[0].find_element(By.LINK_TEXT, vessel))
    WebDriverWait(browser, 20).until(lambda b: b.current_url.endswith("/boardings/" + report_id))
    assert "Émile Ndong" in browser.page_source
    shot(browser, "view")
    shot(browser, "view-phone", width=390)

    # Edit two fields, add a crew member and a violation, save.
    click_and_wait(browser, browser.find_element(By.LINK_TEXT, "Edit"))
    field(browser, "/vessel/permitNumber").clear()
    field(browser, "/vessel/permitNumber").send_keys("GA-2025-EDITED")
    field(browser, "/captain/license").clear()
    field(browser, "/captain/license").send_keys("GA-CAP-99")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "button[name=_add][value='/crew']"))
    # The form came back with what was typed and an empty second crew row.
    assert field(browser, "/vessel/permitNumber").get_attribute("value") == "GA-2025-EDITED"
    field(browser, "/crew/1/name").send_keys("Nouveau Marin")
    field(browser, "/crew/1/license").send_keys("GA-777")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "button[name=_add][value='/inspection/summary/violations']"))
    Select(field(browser, "/inspection/summary/violations/0/disposition")).select_by_value("Citation")
    Select(field(browser, "/inspection/summary/violations/0/offence/code")).select_by_value("Fish and Game code 7145(a)")
    field(browser, "/inspection/summary/violations/0/crewMember/name").send_keys("Nouveau Marin")
    shot(browser, "edit-form")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "button[name=_save]"))

    WebDriverWait(browser, 20).until(lambda b: b.current_url.endswith("/boardings/" + report_id + "?saved=1"))
    page = browser.page_source
    for text in ["GA-2025-EDITED", "GA-CAP-99", "Nouveau Marin", "Fish and Game code 7145(a)", "Fishing without a license"]:
        assert text in page
    doc, version, _ = stored(report_id)
    assert version == 2
    assert doc["vessel"]["permitNumber"] == "GA-2025-EDITED" and doc["captain"]["license"] == "GA-CAP-99"
    assert [c["name"] for c in doc["crew"]] == ["Crew One", "Nouveau Marin"]
    assert doc["inspection"]["summary"]["violations"][0]["offence"]["explanation"] == "Fishing without a license"
    # Untouched values keep their exact stored form (12.5 stays a number, dates unchanged).
    assert doc["inspection"]["actualCatch"][0]["weight"] == 12.5 and doc["date"] == "2025-03-02T10:00:00Z"
    timeline = browser.find_element(By.ID, "history-h").find_element(By.XPATH, "..").text
    if history_exists():
        assert "web back office" in timeline and "GA-2025-EDITED" in timeline
    else:
        assert "does not record report history" in timeline
    shot(browser, "view-after-edit")


def test_create_a_report(browser):
    sign_in(browser, "gabon.officer2@demo.tideway")
    browser.get(URL + "/boardings/new")
    vessel = "Nouvelle " + uuid.uuid4().hex[:6]
    field(browser, "/vessel/name").send_keys(vessel)
    field(browser, "/vessel/permitNumber").send_keys("GA-NEW-1")
    Select(field(browser, "/vessel/nationality")).select_by_value("EC")
    Select(field(browser, "/vessel/homePort")).select_by_value("London")
    field(browser, "/location/1").send_keys("-0.5")
    field(browser, "/location/0").send_keys("9.1")
    Select(field(browser, "/inspection/summary/safetyLevel/level")).select_by_value("Amber")
    # A bad number comes back with a message next to it and everything typed kept.
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "button[name=_add][value='/inspection/actualCatch']"))
    Select(field(browser, "/inspection/actualCatch/0/fish")).select_by_value("Swordfish")
    field(browser, "/inspection/actualCatch/0/number").send_keys("many")
    field(browser, "/inspection/actualCatch/0/weight").send_keys("40")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "button[name=_save]"))
    assert "The report was not saved" in browser.page_source
    error = browser.find_element(By.ID, "f-inspection-actualCatch-0-number-error")
    assert "whole number" in error.text
    assert field(browser, "/vessel/name").get_attribute("value") == vessel
    shot(browser, "new-invalid")
    shot(browser, "new-invalid-phone", width=390)
    field(browser, "/inspection/actualCatch/0/number").clear()
    field(browser, "/inspection/actualCatch/0/number").send_keys("7")
    click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "button[name=_save]"))

    WebDriverWait(browser, 20).until(lambda b: "?saved=1" in b.current_url)
    report_id = browser.current_url.split("/boardings/")[1].split("?")[0]
    doc, version, partition = stored(report_id)
    assert partition == "agency=Gabon" and version == 1
    assert doc["vessel"]["name"] == vessel and doc["location"] == [9.1, -0.5]
    assert doc["inspection"]["actualCatch"] == [{"fish": "Swordfish", "number": 7, "weight": 40, "unit": "kg"}]
    assert doc["reportingOfficer"]["email"] == "gabon.officer2@demo.tideway"
    shot(browser, "new-saved")


def test_a_script_in_a_vessel_name_is_text(browser):
    vessel = "<script>alert(1)</script>"
    report_id = insert_report(report_doc(vessel, captain="Xss Captain " + uuid.uuid4().hex[:4]))
    sign_in(browser, "gabon.officer1@demo.tideway")
    for path in ["/boardings?q=alert", "/boardings/" + report_id, "/boardings/" + report_id + "/edit",
                 "/boardings/" + report_id + "/print"]:
        browser.get(URL + path)
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text
        assert vessel in browser.find_element(By.TAG_NAME, "body").text
    shot(browser, "xss-as-text")
