"""Headless Chromium for the dashboard's browser tests beside `test_browser.py`'s own site:
`chromium_page` is one page of a browser started once per module (Debian's chromium, driven
by Playwright, as `test_browser.py` starts it), and `screenshot` saves what the page shows
under $LONGBOAT_SCREENSHOTS for docs/dashboard.md."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboard.test_browser import CHROMIUM, CHROMIUM_ARGS, require_chromium


@pytest.fixture(scope="module")
def chromium_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1366, "height": 800},
        )
        try:
            yield context.new_page()
        finally:
            context.close()


def screenshot(page: Any, name: str) -> None:
    """With LONGBOAT_SCREENSHOTS=DIR, the whole page as DIR/name.png."""
    shots = os.environ.get("LONGBOAT_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / f"{name}.png"), full_page=True)
