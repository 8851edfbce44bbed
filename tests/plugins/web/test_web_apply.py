"""Schedules as code through the dashboard (Starlette's TestClient on a real SQLite store):
``POST /api/plan`` and ``POST /api/apply`` need the token and answer as ``tickwork apply --plan
--json``; a schedule changed since the apply shows its drift on its page (who, when, what)."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.testclient import TestClient

from tests.support.webhelpers import RECORD, TOKEN, client

HEADERS = {"Authorization": f"Bearer {TOKEN}", "X-Tickwork-User": "ci"}
FILES = {"schedules": [{"name": "export", "expression": "0 9 * * *", "target": RECORD}]}


def test_plan_and_apply_over_the_api(fresh: Path) -> None:
    with client(fresh, TOKEN) as api:
        assert api.post("/api/plan", json=FILES).status_code == 401  # it imports targets: a token
        plan = api.post("/api/plan", json=FILES, headers=HEADERS)
        assert plan.status_code == 200, plan.text
        body = plan.json()
        assert body["pending"] and not body["applied"] and [a["name"] for a in body["add"]] == ["export"]
        assert api.get("/api/schedules/export").status_code == 404  # a plan writes nothing
        done = api.post("/api/apply", json=FILES, headers=HEADERS)
        assert done.status_code == 200 and done.json()["applied"]
        shown = api.get("/api/schedules/export").json()
        assert (shown["applied_version"], shown["drift"]) == (1, False)
        assert shown["versions"][0]["by"] == "apply:ci (API token)"
        assert not api.post("/api/plan", json=FILES, headers=HEADERS).json()["pending"]
        pruned = api.post("/api/plan", json={**FILES, "prune": True}, headers=HEADERS).json()
        assert sorted(pruned["remove"]) == ["broken", "late", "nightly-report", "paused"]
        bad = api.post(
            "/api/apply", json={"schedules": [{"name": "x", "expression": "nope", "target": RECORD}]}, headers=HEADERS
        )
        assert bad.status_code == 400 and "x" not in [s["name"] for s in api.get("/api/schedules").json()["schedules"]]
        assert api.post("/api/apply", json={"schedules": "x"}, headers=HEADERS).status_code == 400
        assert api.post("/api/apply", json={**FILES, "by": "me"}, headers=HEADERS).status_code == 400


def test_the_schedule_page_shows_drift_with_who_and_what(fresh: Path, browser: tuple[TestClient, str]) -> None:
    with client(fresh, TOKEN) as api:
        assert api.post("/api/apply", json=FILES, headers=HEADERS).status_code == 200
        c, _ = browser
        assert 'id="drift"' not in c.get("/schedules/export").text
        bob = {**HEADERS, "X-Tickwork-User": "bob"}
        assert api.patch("/api/schedules/export", json={"retries": 2}, headers=bob).status_code == 200
    page = c.get("/schedules/export").text
    assert "version 1 applied from files" in page and 'href="#drift"' in page
    section = page[page.index('id="drift"') : page.index("</section>", page.index('id="drift"'))]
    (row,) = re.findall(r'<li class="drift-version" data-version="(\d+)">(.*?)</li>', section, re.S)
    assert row[0] == "2" and "bob (API token)" in row[1]
    assert "<code>retries</code> <del><code>0</code></del> → <ins><code>2</code></ins>" in row[1]
