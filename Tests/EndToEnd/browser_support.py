"""Headless Chromium for the tests that look at pages in a real browser, started one way,
and the folder their screenshots go to ($TIDEWAY_TEST_STATE/screenshots)."""
import os
import shutil

from conftest import STATE

CHROMIUM = "/usr/bin/chromium"
HAVE_CHROMIUM = bool(shutil.which("chromedriver")) and os.path.exists(CHROMIUM)
NO_CHROMIUM = "chromium and chromium-driver are not installed"


def chromium(width=1200, height=900):
    """A headless Chromium with a window of that size; the caller quits it."""
    # Imported here: a test module that skips without Chromium needs no selenium either.
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}",
                 # The stack's own CA is not in the system store; only this browser trusts it.
                 "--ignore-certificate-errors"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def screenshot_dir():
    path = os.path.join(STATE or "/tmp", "screenshots")
    os.makedirs(path, exist_ok=True)
    return path


def shot(driver, name):
    """The page as it is now, as screenshots/<name>.png."""
    driver.save_screenshot(os.path.join(screenshot_dir(), name + ".png"))
