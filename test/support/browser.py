"""Headless Chromium for the page's browser test: Debian's chromium and chromedriver (hack/browser.sh installs
them), driven by Selenium, which is told both paths so that it never looks for a browser or driver to download."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

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
