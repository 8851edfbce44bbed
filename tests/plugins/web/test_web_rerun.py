"""``on_abandon`` through the dashboard: the create form offers it and stores it, the schedule page
and ``/api`` show it."""

from __future__ import annotations

import html
import re
from pathlib import Path

from starlette.testclient import TestClient

import tickwork
import tickwork_web
from tests.support.webhelpers import RECORD, TOKEN, write_config


def test_the_form_sets_on_abandon_and_the_page_and_api_show_it(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with tickwork.connect(config) as admin:
        admin.add("plain", "0 * * * *", RECORD)  # creates the database
    with TestClient(tickwork_web.app(config, token=TOKEN), follow_redirects=False) as c:
        assert c.post("/login", data={"token": TOKEN, "name": "alice"}).status_code == 303
        blank = c.get("/new").text
        assert re.search(r'<select id="f-on_abandon" name="on_abandon"', blank)
        assert '<option value="rerun"' in blank
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', blank)
        assert csrf
        fields = {"name": "report", "expression": "30 3 * * *", "target": RECORD, "on_abandon": "rerun"}
        saved = c.post("/new", data={"csrf": csrf.group(1), "enabled": "1", "do": "save", **fields})
        assert saved.status_code == 303, saved.text
        with tickwork.connect(config) as admin:
            assert admin.get("report").spec.on_abandon == "rerun"
        page = html.unescape(c.get("/schedules/report").text)
        assert "On abandon" in page and "a fire abandoned with its node runs again" in page
        assert "On abandon" not in html.unescape(c.get("/schedules/plain").text)
        assert c.get("/api/schedules/report").json()["on_abandon"] == "rerun"
        assert c.get("/api/schedules/plain").json()["on_abandon"] == "skip"
        # The edit form shows the stored choice selected.
        assert re.search(r'<option value="rerun"\s+selected', c.get("/edit/report").text)
