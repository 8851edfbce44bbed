"""The dashboard's versions of a schedule over HTTP (Starlette's TestClient on a real SQLite store):
a change through the JSON API is a version by the API caller's name, one through the edit form a
version by the logged-in operator, and the schedule page and its JSON list them with their changes."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.testclient import TestClient

from tests.support.webhelpers import RECORD, TOKEN, client


def test_the_schedule_page_lists_who_changed_what(fresh: Path, browser: tuple[TestClient, str]) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Tickwork-User": "bob"}
    with client(fresh, TOKEN) as api:
        body = {"name": "export", "expression": "0 9 * * *", "target": RECORD}
        assert api.post("/api/schedules", json=body, headers=headers).status_code == 201
        changed = api.patch("/api/schedules/export", json={"retries": 2}, headers=headers)
        assert changed.status_code == 200 and changed.json()["schedule"]["version"] == 2
    c, csrf = browser
    edited = c.post(
        "/edit/export",
        data={"csrf": csrf, "expression": "30 9 * * *", "target": RECORD, "retries": "2", "timeout": "300"},
    )
    assert edited.status_code == 303, edited.text

    detail = c.get("/api/schedules/export").json()
    assert detail["version"] == 3
    # By whom, as the audit log names the actor: the session's or the API caller's name.
    by = [(v["version"], v["by"]) for v in detail["versions"]]
    assert re.fullmatch(r"alice \(session [0-9a-f]+\)", by[0][1]), by
    assert by[1:] == [(2, "bob (API token)"), (1, "bob (API token)")] and by[0][0] == 3
    assert detail["versions"][0]["changes"] == {"expression": {"old": "0 9 * * *", "new": "30 9 * * *"}}

    page = c.get("/schedules/export").text
    section = page[page.index('id="versions"') :]
    rows = re.findall(r'<tr class="version" data-version="(\d+)">(.*?)</tr>', section, re.S)
    assert [n for n, _ in rows] == ["3", "2", "1"]
    latest = rows[0][1]
    assert "(current)" in latest and "alice" in latest
    assert '<del><code>"0 9 * * *"</code></del> → <ins><code>"30 9 * * *"</code></ins>' in latest
    assert "<code>retries</code>" in rows[1][1] and "bob" in rows[1][1]
