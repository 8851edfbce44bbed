"""Debian's Chromium driven by Playwright, for the dashboard's end-to-end tests.

Never ``playwright install``: the browser is the distribution's ``chromium`` package. When it is
missing, the setup installs it if it runs as root and fails with the command otherwise; a browser
test never skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, sync_playwright

from tests.support.paths import REPO

CHROMIUM = Path("/usr/bin/chromium")
#: Where the screenshots go: docs/images/ for docs/web.md with TICKWORK_DOCS_SCREENSHOTS=1, else a
#: temporary directory (a test run leaves the checkout unchanged).
IMAGES = (
    REPO / "docs" / "images"
    if os.environ.get("TICKWORK_DOCS_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "tickwork-screenshots"
)
#: How long to wait for a page to show what a node did (the node and the page poll).
SHOWS_WITHIN_MS = 20_000
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def ensure_chromium() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    if os.geteuid() != 0:
        pytest.fail(
            f"the browser tests need Debian's chromium at {CHROMIUM}: run `sudo apt-get install -y chromium` "
            "(they never download a browser)"
        )
    apt = shutil.which("apt-get")
    if apt is None:
        pytest.fail(f"the browser tests need Debian's chromium at {CHROMIUM}, and there is no apt-get to install it")
    done = subprocess.run([apt, "install", "-y", "chromium"], capture_output=True, text=True)
    if done.returncode != 0:  # the package lists may be missing in a fresh container
        subprocess.run([apt, "update"], capture_output=True, text=True)
        done = subprocess.run([apt, "install", "-y", "chromium"], capture_output=True, text=True)
    if not CHROMIUM.exists():
        pytest.fail(f"`apt-get install -y chromium` did not provide {CHROMIUM}:\n{done.stdout[-2000:]}{done.stderr}")
    return CHROMIUM


@contextmanager
def chromium(profile: Path) -> Iterator[BrowserContext]:
    """A headless Chromium with a fresh profile in ``profile``."""
    executable = ensure_chromium()
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(executable),
            headless=True,
            args=ARGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
