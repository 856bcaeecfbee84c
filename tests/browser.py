"""Load a page in headless Chromium (Debian's, driven by Playwright): what it fetched and showed."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

#: What the machine's closed network and a root user need (the environment's notes).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str | None:
    """Debian's chromium, where it is installed; None when it is not."""
    path = shutil.which("chromium") or "/usr/bin/chromium"
    return path if Path(path).is_file() else None


def require_chromium() -> str:
    """Chromium's path; skip without it, unless under CI (``.ci/run`` installs it): then fail."""
    path = chromium_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed, and CI must run the browser test")
        pytest.skip("chromium is not installed (apt-get install chromium); CI installs it")
    return path


@dataclass(frozen=True)
class Loaded:
    """A page as the browser saw it."""

    requests: list[str]
    failed: list[str]
    errors: list[str]
    image_widths: list[int]
    body: str

    @property
    def foreign(self) -> list[str]:
        """Requests for anything but the file itself and its ``data:`` pictures."""
        return [u for u in self.requests if not u.startswith(("file://", "data:"))]


def load(chromium: str, page: Path, screenshot: Path) -> Loaded:
    """Open ``page`` from disk, wait for it to load, take a full-page screenshot."""
    from playwright.sync_api import sync_playwright

    requests: list[str] = []
    failed: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.on("request", lambda r: requests.append(r.url))
            tab.on("requestfailed", lambda r: failed.append(r.url))
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.goto(page.as_uri(), wait_until="load")
            widths = tab.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
            body = tab.inner_text("body")
            tab.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return Loaded(requests, failed, errors, list(widths), body)
