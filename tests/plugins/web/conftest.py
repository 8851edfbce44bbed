"""The web tests' fixtures: a populated configuration of their own, a logged-in client of the app
on it, a running node, and a Chromium page (the browser tests)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page
from starlette.testclient import TestClient

from tests.support.browser import chromium
from tests.support.webhelpers import TOKEN, client, populate, process, write_config


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    """A store of its own (SQLite, populated), for tests that change schedules: its config file."""
    path = write_config(tmp_path)
    populate(path)
    return path


@pytest.fixture
def browser(fresh: Path) -> Iterator[tuple[TestClient, str]]:
    """A logged-in client (as alice) and its CSRF token."""
    with client(fresh, TOKEN) as c:
        assert c.post("/login", data={"token": TOKEN, "name": "alice"}).status_code == 303
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/").text)
        assert found
        yield c, found.group(1)


@pytest.fixture
def node(fresh: Path) -> Iterator[None]:
    """A ``tickwork run`` process on the fresh store."""
    with process(["-c", str(fresh), "run"], fresh.parent, fresh.parent / "node.log"):
        yield


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    with chromium(tmp_path / "profile") as context:
        yield context.new_page()
