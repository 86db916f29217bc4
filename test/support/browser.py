"""Headless Chromium for the page's browser test: Debian's chromium and chromedriver (hack/browser.sh installs
them), driven by Selenium, which is told both paths so that it never looks for a browser or driver to download."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

REPO = Path(__file__).resolve().parents[2]


def browser_paths() -> tuple[str, str]:
    """(chromium, chromedriver): hack/browser.sh's, failing the test with its output when it cannot have them."""
    found = subprocess.run(["bash", str(REPO / "hack" / "browser.sh")], capture_output=True, text=True,
                           timeout=1800, check=False)
    assert found.returncode == 0, f"hack/browser.sh failed:\n{found.stderr[-3000:]}"
    chromium, driver = found.stdout.split()[-2:]
    return chromium, driver


def headless_chromium(download_dir: Path) -> webdriver.Chrome:
    chromium, driver = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    options.add_experimental_option("prefs", {"download.default_directory": str(download_dir)})
    assert shutil.which(driver), driver
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


# The page updates itself live, so an element found may be replaced before it is read: these read it as absent
# then, and the caller's wait_for reads again at its next poll.


def keep_failed_page(driver: WebDriver, where: Path) -> None:
    """A failed browser test's page, as HTML and a screenshot in `where`, for whoever reads the failure."""
    (where / "failed.html").write_text(driver.page_source)
    driver.save_screenshot(str(where / "failed.png"))
    print(f"at {driver.current_url}, the page: {where / 'failed.html'}")


def text_of(driver: WebDriver, css: str) -> str:
    """The text of the first element `css` selects, "" when there is none or it was replaced while read."""
    try:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        return found[0].text if found else ""
    except StaleElementReferenceException:
        return ""


def texts_of(driver: WebDriver, css: str) -> list[str]:
    """The text of every element `css` selects, [] when one was replaced while they were read."""
    try:
        return [element.text for element in driver.find_elements(By.CSS_SELECTOR, css)]
    except StaleElementReferenceException:
        return []


def clicked(driver: WebDriver, css: str) -> bool:
    """Whether the element `css` selects took the click (False when it was replaced or not clickable yet)."""
    try:
        driver.find_element(By.CSS_SELECTOR, css).click()
    except (StaleElementReferenceException, WebDriverException):
        return False
    return True
