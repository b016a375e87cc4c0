"""The administration pages in a real headless Chromium: invite a user, open the link,
set a password and sign in as them; deactivate them and see their open session end;
edit a menu list and find the change in a sync pull of that agency. Screenshots of the
pages at desktop and phone widths go to the stack's screenshots folder."""
import uuid

import pytest

from admin_support import GLOBAL_ADMIN, user_row
from browser_support import HAVE_CHROMIUM, NO_CHROMIUM, chromium, shot
from conftest import PASSWORD, URL
from synclib import Client

if not HAVE_CHROMIUM:
    pytest.skip(NO_CHROMIUM, allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

def sign_in(driver, email, password=PASSWORD):
    driver.get(URL + "/login")
    driver.find_element(By.NAME, "email").send_keys(email)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    # Signed in: the home page is the role's dashboard, with the user's name in the top bar.
    WebDriverWait(driver, 20).until(lambda d: "/login" not in d.current_url)
    WebDriverWait(driver, 20).until(EC.presence_of_element_located((By.CSS_SELECTOR, ".who .name")))


def pull_all(client, partition, cursor):
    """Pulls until the partition has nothing more; answers the cursor and every change."""
    changes = []
    while True:
        entry = client.pull({partition: cursor})[partition]
        assert entry["status"] == "ok", entry
        changes += entry["changes"]
        cursor = entry["cursor"]
        if not entry["more"]:
            return cursor, changes


@pytest.fixture
def drivers():
    made = []

    def make(**kwargs):
        made.append(chromium(**kwargs))
        return made[-1]

    yield make
    for driver in made:
        driver.quit()


def test_invite_set_password_sign_in_then_deactivate_ends_the_session(drivers):
    admin = drivers()
    wait = WebDriverWait(admin, 20)
    sign_in(admin, GLOBAL_ADMIN)
    admin.get(URL + "/users")
    email = f"t-{uuid.uuid4().hex[:10]}@test.tideway"
    form = admin.find_element(By.CSS_SELECTOR, "form[action='/users'][method=post]")
    form.find_element(By.NAME, "email").send_keys(email)
    form.find_element(By.NAME, "firstName").send_keys("Brow")
    form.find_element(By.NAME, "lastName").send_keys("Ser")
    Select(form.find_element(By.NAME, "agency")).select_by_value("Gabon")
    shot(admin, "admin-users-desktop")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait.until(EC.presence_of_element_located((By.ID, "link")))
    link = admin.find_element(By.ID, "link").get_attribute("value")
    assert "/invite/" in link

    invitee = drivers(width=390, height=844)
    invitee.get(link)
    assert email in invitee.find_element(By.TAG_NAME, "main").text
    shot(invitee, "invite-phone")
    invitee.find_element(By.NAME, "password").send_keys("browser-password-1")
    invitee.find_element(By.NAME, "confirm").send_keys("browser-password-1")
    invitee.find_element(By.CSS_SELECTOR, "main button[type=submit]").click()
    WebDriverWait(invitee, 20).until(EC.url_contains("/login"))
    sign_in(invitee, email, "browser-password-1")
    assert "Brow Ser" in invitee.find_element(By.TAG_NAME, "main").text

    admin.get(URL + "/users/" + user_row(email)["id"])
    shot(admin, "admin-user-desktop")
    admin.find_element(By.ID, "deactivate").click()
    wait.until(EC.presence_of_element_located((By.ID, "reactivate")))
    invitee.get(URL + "/account")
    WebDriverWait(invitee, 20).until(EC.url_contains("/login"))
    assert not user_row(email)["active"]


def test_menu_list_edit_reaches_a_sync_pull_of_the_agency(drivers):
    officer = Client("gabon.officer1@demo.tideway")
    partition = "agency=Gabon"
    cursor, _ = pull_all(officer, partition, None)

    admin = drivers()
    sign_in(admin, "gabon.admin@demo.tideway")
    admin.get(URL + "/agencies/Gabon")
    ports = admin.find_element(By.NAME, "ports")
    port = f"Port {uuid.uuid4().hex[:6]}"
    ports.send_keys("\n" + port)
    violations = admin.find_element(By.NAME, "violations")
    violations.send_keys(f"\nZZ{port[-6:]} | Browser-made violation")
    shot(admin, "agency-desktop")
    admin.find_element(By.CSS_SELECTOR, "form.menu-form button[type=submit]").click()
    WebDriverWait(admin, 20).until(EC.url_contains("saved=1"))
    assert port in admin.find_element(By.NAME, "ports").get_attribute("value")

    _, changes = pull_all(officer, partition, cursor)
    menus = [c for c in changes if c["collection"] == "menuData"]
    assert len(menus) == 1
    doc = menus[0]["doc"]
    assert doc["ports"][-1] == port
    assert doc["violationCodes"][-1] == "ZZ" + port[-6:]
    assert doc["violationDescriptions"][-1] == "Browser-made violation"
    assert len(doc["violationCodes"]) == len(doc["violationDescriptions"])

    phone = drivers(width=390, height=844)
    sign_in(phone, "gabon.admin@demo.tideway")
    phone.get(URL + "/agencies/Gabon")
    shot(phone, "agency-phone")
