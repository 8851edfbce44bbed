"""Roles and API tokens through the JSON API and the pages (docs/web.md#roles-and-tokens): each
role gets what it may and a 403 for the rest; a token for another namespace sees none of the
"default" schedules (lists empty, show and act 403) while one for "default" does; the action
log and the versions' author name the token; a revoked token stops at once; the configured token
stays an admin; with ``public_reads = false`` reads need a token."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import tickwork
import tickwork_web
from tests.support.webhelpers import RECORD, TOKEN, client, populate, write_config

LOGGER = "tickwork.web.actions"


def make(config: Path, name: str, role: str, *namespaces: str) -> str:
    with tickwork.connect(config) as admin:
        return admin.create_token(name, role, namespaces)[1]


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_each_role_may_what_it_should_and_is_refused_the_rest(fresh: Path) -> None:
    viewer, operator, admin = (make(fresh, n, n) for n in ("viewer", "operator", "admin"))
    with client(fresh, None) as c:  # no configured token: the store's tokens alone
        # viewer: reads, nothing else
        assert c.get("/api/schedules", headers=bearer(viewer)).json()["total"] == 4
        refused = c.post("/api/schedules/late/trigger", headers=bearer(viewer))
        assert refused.status_code == 403
        assert refused.json()["error"] == "token 'viewer' (viewer) may not trigger: that needs the operator role"
        # operator: state and runs, not definitions
        for action in ("trigger", "disable", "enable"):
            assert c.post(f"/api/schedules/late/{action}", headers=bearer(operator)).status_code == 200, action
        assert c.post("/api/schedules/late/pause", headers=bearer(operator), json={"note": "n"}).status_code == 200
        assert c.post("/api/schedules/late/resume", headers=bearer(operator)).status_code == 200
        assert c.patch("/api/schedules/late", headers=bearer(operator), json={"retries": 2}).status_code == 403
        assert c.delete("/api/schedules/late", headers=bearer(operator)).status_code == 403
        new = {"name": "n1", "expression": "0 5 * * *", "target": RECORD}
        assert c.post("/api/schedules", headers=bearer(operator), json=new).status_code == 403
        # admin: everything
        assert c.post("/api/schedules", headers=bearer(admin), json=new).status_code == 201
        assert c.patch("/api/schedules/n1", headers=bearer(admin), json={"retries": 2}).status_code == 200
        assert c.delete("/api/schedules/n1", headers=bearer(admin)).status_code == 200
        # a wrong token is refused, even for a read
        assert c.get("/api/schedules", headers=bearer(viewer + "x")).status_code == 403


def test_a_token_of_another_namespace_sees_and_touches_none_of_default(fresh: Path) -> None:
    ours = make(fresh, "ours", "admin", "default")
    theirs = make(fresh, "theirs", "admin", "team-b")
    with client(fresh, TOKEN) as c:
        assert c.get("/api/schedules", headers=bearer(ours)).json()["total"] == 4
        assert c.get("/api/schedules/late", headers=bearer(ours)).status_code == 200
        assert c.post("/api/schedules/late/trigger", headers=bearer(ours)).status_code == 200

        listed = c.get("/api/schedules", headers=bearer(theirs)).json()
        assert (listed["total"], listed["schedules"]) == (0, [])
        assert c.get("/api/runs", headers=bearer(theirs)).json() == {"runs": []}
        shown = c.get("/api/schedules/late", headers=bearer(theirs))
        assert shown.status_code == 403 and "namespace 'default'" in shown.json()["error"]
        assert c.get("/api/runs?schedule=late&namespace=default", headers=bearer(theirs)).status_code == 403
        # Without a namespace its lists read its own: no schedule of that name there.
        assert c.get("/api/runs?schedule=late", headers=bearer(theirs)).status_code == 404
        for method, path in (
            ("POST", "/api/schedules/late/trigger"),
            ("POST", "/api/schedules/late/pause"),
            ("PATCH", "/api/schedules/late"),
            ("DELETE", "/api/schedules/late"),
        ):
            answer = c.request(method, path, headers=bearer(theirs), json={"note": "x", "retries": 1})
            assert answer.status_code == 403, (method, path, answer.text)
        made = c.post(
            "/api/schedules", headers=bearer(theirs), json={"name": "b1", "expression": "0 5 * * *", "target": RECORD}
        )
        assert made.status_code == 403 and "namespace 'default'" in made.json()["error"]
    with tickwork.connect(fresh) as admin:
        assert admin.get("late").spec.retries == 0 and "b1" not in admin.names()


def test_the_action_log_and_the_versions_name_the_token(fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = make(fresh, "deploy-bot", "admin")
    caplog.set_level(logging.INFO, logger=LOGGER)
    with client(fresh, TOKEN) as c:
        assert c.post("/api/schedules/late/trigger", headers=bearer(secret)).status_code == 200
        changed = c.patch(
            "/api/schedules/late", headers={**bearer(secret), "X-Tickwork-User": "carol"}, json={"retries": 1}
        )
        assert changed.status_code == 200
        assert c.patch("/api/schedules/late", headers=bearer(TOKEN), json={"retries": 2}).status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert any(line.startswith("action trigger on schedule 'late' by token deploy-bot from ") for line in lines)
    assert any("action edit on schedule 'late' by carol (token deploy-bot) from " in line for line in lines)
    with tickwork.connect(fresh) as admin:
        assert [v.by for v in admin.versions("late")][-2:] == ["carol (token deploy-bot)", "API token"]


def test_a_revoked_token_stops_at_once_in_the_api_and_its_sessions(fresh: Path) -> None:
    secret = make(fresh, "temp", "operator")
    with client(fresh, None) as c:
        assert c.post("/login", data={"token": secret, "name": "dan"}).status_code == 303
        assert "dan (token temp, session" in c.get("/").text
        with tickwork.connect(fresh) as admin:
            admin.revoke_token("temp")
        assert c.get("/api/schedules", headers=bearer(secret)).status_code == 403
        page = c.get("/").text
        # The session ended with its token; with no token left at all, the dashboard is read-only.
        assert "token temp" not in page and "read-only" in page


def login(c: TestClient, secret: str) -> str:
    assert c.post("/login", data={"token": secret}).status_code == 303
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/schedules/late").text)
    return found.group(1) if found else ""


def test_the_pages_follow_the_role_and_the_namespace(fresh: Path) -> None:
    viewer, operator = make(fresh, "v", "viewer"), make(fresh, "o", "operator")
    other = make(fresh, "other", "admin", "team-b")
    with client(fresh, None) as c:
        assert login(c, viewer) == ""  # a viewer's pages carry no action form at all
        page = c.get("/schedules/late").text
        assert 'data-action="trigger"' not in page and "it reads only" in page
        assert c.get("/new").status_code == 403
    with client(fresh, None) as c:
        csrf = login(c, operator)
        page = c.get("/schedules/late").text
        assert (
            'data-action="trigger"' in page and 'data-action="edit"' not in page and 'data-action="remove"' not in page
        )
        assert c.post("/schedules/late/trigger", data={"csrf": csrf}).status_code == 303
        assert c.post("/schedules/late/remove", data={"csrf": csrf}).status_code == 403
        assert c.post("/selection", data={"csrf": csrf, "action": "remove", "name": "late"}).status_code == 403
        assert c.get("/edit/late").status_code == 403
    with client(fresh, None) as c:
        csrf = login(c, other)
        assert c.get("/schedules/late").status_code == 403
        assert "0 schedules" in c.get("/").text
        assert c.post("/schedules/late/trigger", data={"csrf": csrf}).status_code == 403
        assert c.post("/selection", data={"csrf": csrf, "action": "disable", "name": "late"}).status_code == 403
    with tickwork.connect(fresh) as admin:
        assert admin.get("late").enabled


def test_reads_need_a_token_when_they_are_not_public(tmp_path: Path) -> None:
    config = write_config(tmp_path, extra="[web]\npublic_reads = false\n")
    populate(config)
    viewer = make(config, "v", "viewer")
    with TestClient(tickwork_web.app(config), follow_redirects=False) as c:
        assert c.get("/api/schedules").status_code == 401
        assert c.get("/api/schedules", headers=bearer(viewer)).json()["total"] == 4
        assert c.get("/").status_code == 303 and c.get("/login").status_code == 200
        login(c, viewer)
        assert c.get("/").status_code == 200
