"""Headless Chromium for the dashboard's browser tests: `chromium_page` is one page of a
browser started once per module (Debian's chromium, driven by Playwright for Python, which
never downloads a browser here), and `screenshot` saves what a page shows under
$LONGBOAT_SCREENSHOTS, for docs/dashboard.md; `cell_texts` reads a table's cells."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
# This machine and CI have no network: nothing of Chromium's own may try to reach out.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# How long a page may take to show what a test waits for.
WAIT_MS = 15_000


def require_chromium() -> None:
    if os.environ.get("LONGBOAT_SKIP_BROWSER") == "1":
        pytest.skip("LONGBOAT_SKIP_BROWSER=1: the dashboard's browser tests are skipped")
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        pytest.fail(
            f"{CHROMIUM} is missing: run `make browser` (Debian's chromium package), or set "
            "LONGBOAT_SKIP_BROWSER=1 to skip the browser tests"
        )


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


def cell_texts(page: Any, selector: str) -> list[str]:
    """The text of every element `selector` finds (table cells), stripped."""
    return [t.strip() for t in page.locator(selector).all_inner_texts()]
