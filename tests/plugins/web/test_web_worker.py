"""The queue worker that ran a hand-off, on the dashboard: a Worker column on the schedule's page
and the runs page when a run shown has one (none otherwise), and ``worker`` in the JSON API.
Over HTTP against the app, and in a real Chromium against ``tickwork web``. The runs are written
as a node and a Celery worker write them: the fire claimed and handed off through the store, then
reported started and ended by the worker's reporter."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect
from starlette.testclient import TestClient

import tickwork
from tests.support.webhelpers import TOKEN, client, web_server, write_config
from tickwork.plugin.runcontext import RunContext
from tickwork.structures import Finish, Outcome, RunStatus
from tickwork_handoff.reporter import Reporter

APP = "tests.support.handoff.celery_app:app"


def _hand_off(config: Path, name: str, worker: str | None) -> int:
    """Add ``name`` (Celery) and hand its fire off; with ``worker``, that worker runs it."""
    with tickwork.connect(config) as admin:
        admin.add(name, "0 0 1 1 *", "handoff.work", executor="celery")
        admin.trigger(name)
        store = admin.store(write=True)
        (claim,) = [c for c in store.claim_due("web-node", limit=10, buckets=None) if c.spec.name == name]
        assert claim.run_id is not None
        assert store.finish("web-node", [Finish(claim, Outcome(RunStatus.SUBMITTED), None)]) == [True]
        if worker is not None:
            context = RunContext(
                schedule=name, scheduled_for=claim.scheduled_for, attempt=1, run_id=claim.run_id, node_id="web-node"
            )
            reporter = Reporter(store, wait_for_node=0)
            assert reporter.begin(context, worker=worker)
            reporter.succeeded(context)
        return claim.run_id


def _logged_in(c: TestClient) -> None:
    assert c.post("/login", data={"token": TOKEN, "name": "alice"}).status_code == 303


def _worker_cells(html: str) -> list[str]:
    return re.findall(r'<td data-label="Worker"[^>]*>([^<]*)</td>', html)


def test_the_schedule_page_and_runs_page_name_the_worker_of_a_handoff(tmp_path: Path) -> None:
    config = write_config(tmp_path, extra=f'[executor.celery]\napp = "{APP}"\n')
    ran = _hand_off(config, "report", "celery@alpha")
    _hand_off(config, "waiting", None)
    with client(config, TOKEN) as c:
        _logged_in(c)
        page = c.get("/schedules/report")
        assert page.status_code == 200
        assert "<th>Worker</th>" in page.text and _worker_cells(page.text) == ["celery@alpha"]
        # A schedule whose runs no worker started has no Worker column at all.
        other = c.get("/schedules/waiting")
        assert other.status_code == 200 and "<th>Worker</th>" not in other.text and _worker_cells(other.text) == []
        # The runs of every schedule: the column is there, "-" for the run no worker took.
        runs = c.get("/runs")
        assert sorted(_worker_cells(runs.text)) == ["-", "celery@alpha"]
        found = c.get("/api/runs", headers={"Authorization": f"Bearer {TOKEN}"}).json()["runs"]
        assert {r["schedule"]: r["worker"] for r in found} == {"report": "celery@alpha", "waiting": None}
        assert [r["id"] for r in found if r["worker"]] == [ran]


def test_chromium_shows_the_worker_beside_the_node(tmp_path: Path, page: Page) -> None:
    config = write_config(tmp_path, extra=f'[executor.celery]\napp = "{APP}"\n')
    ran = _hand_off(config, "report", "celery@alpha")
    with web_server(config, TOKEN) as base:
        page.goto(base + "/login")
        page.get_by_label("Token").fill(TOKEN)
        page.get_by_label("Your name, for the action log").fill("alice")
        page.get_by_role("button", name="Log in").click()
        page.goto(base + "/schedules/report")
        row = page.locator(f'#history tr[data-run="{ran}"]')
        expect(row.locator('td[data-label="Node"]')).to_have_text("web-node")
        expect(row.locator('td[data-label="Worker"]')).to_have_text("celery@alpha")
        expect(row.locator('td[data-label="Worker"]')).to_be_visible()
