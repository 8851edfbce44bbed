"""The dashboard and its JSON API across namespaces (docs/teams.md), over HTTP on a real SQLite
store: listings show every namespace and each schedule's, ``?namespace=`` filters them, one name in
two namespaces is two schedules addressed by ``?namespace=``, and an action stays in its namespace."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from tests.support.webhelpers import RECORD, TOKEN, client

HEADERS = {"Authorization": f"Bearer {TOKEN}", "X-Tickwork-User": "bob"}


def test_listings_show_and_filter_namespaces_and_actions_stay_in_theirs(
    fresh: Path, browser: tuple[TestClient, str]
) -> None:
    with client(fresh, TOKEN) as api:
        for namespace, hour in (("billing", 9), ("search", 10)):
            body = {"name": "export", "expression": f"0 {hour} * * *", "target": RECORD}
            created = api.post(f"/api/schedules?namespace={namespace}", json=body, headers=HEADERS)
            assert created.status_code == 201, created.text
            assert created.json()["schedule"]["namespace"] == namespace
        listed = api.get("/api/schedules?limit=500").json()["schedules"]
        assert sorted(s["namespace"] for s in listed if s["name"] == "export") == ["billing", "search"]
        only = api.get("/api/schedules?namespace=search").json()
        assert [(s["namespace"], s["name"]) for s in only["schedules"]] == [("search", "export")]
        assert only["total"] == 1
        detail = api.get("/api/schedules/export?namespace=billing").json()
        assert detail["expression"] == "0 9 * * *"
        assert api.get("/api/schedules/export").status_code == 404  # not in default
        paused = api.post("/api/schedules/export/disable?namespace=search", headers=HEADERS)
        assert paused.status_code == 200 and paused.json()["schedule"]["enabled"] is False
        assert api.get("/api/schedules/export?namespace=billing").json()["enabled"] is True
        assert api.get("/api/schedules?namespace=no spaces").status_code == 400

    c, csrf = browser
    page = c.get("/").text
    assert '<td data-label="Namespace" class="namespace">billing</td>' in page
    assert 'href="/schedules/export?namespace=search"' in page
    filtered = c.get("/?namespace=billing").text
    assert 'href="/schedules/export?namespace=billing"' in filtered
    assert "namespace=search" not in filtered
    bad = c.get("/?namespace=no spaces")
    assert bad.status_code == 400 and "namespace:" in bad.text
    shown = c.get("/schedules/export?namespace=billing").text
    assert 'id="namespace">namespace <a href="/?namespace=billing">billing</a>' in shown
    assert 'action="/schedules/export/trigger?namespace=billing"' in shown
    done = c.post("/schedules/export/disable?namespace=billing", data={"csrf": csrf})
    assert done.status_code == 303 and done.headers["location"] == "/schedules/export?namespace=billing&done=disable"
    with client(fresh, TOKEN) as api:
        assert api.get("/api/schedules/export?namespace=billing").json()["enabled"] is False
