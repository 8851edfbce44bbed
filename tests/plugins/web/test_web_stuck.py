"""A stuck hand-off on the dashboard: the ``stuck`` health with its reason on the list and the
schedule's page, released with the page's button in a real Chromium against ``tickwork web``
and through ``POST /api/schedules/NAME/release``, each history row naming who released it.

The stuck run is made as a node and its maintenance step make it: the fire claimed and handed
off through the store, then marked by the hand-off executors' own look (:class:`PickupWatch`)."""

from __future__ import annotations

import time
from pathlib import Path

from playwright.sync_api import Page, expect

import tickwork
from tests.support.browser import SHOWS_WITHIN_MS
from tests.support.webhelpers import TOKEN, client, web_server, write_config
from tickwork.structures import Finish, Outcome, RunStatus
from tickwork_celery.executor import CeleryExecutor
from tickwork_handoff.pickup import PickupWatch

APP = "tests.support.handoff.celery_app:app"
PICKUP = 0.05


def stuck_config(tmp_path: Path) -> Path:
    return write_config(tmp_path, extra=f'[executor.celery]\napp = "{APP}"\npickup_timeout = {PICKUP}\n')


def hand_off_and_mark(config: Path, name: str) -> int:
    """Add ``name`` (Celery), hand its fire off, and let the maintenance step find it stuck."""
    with tickwork.connect(config) as admin:
        admin.add(name, "0 0 1 1 *", "handoff.work", executor="celery")
        admin.trigger(name)
        store = admin.store(write=True)
        (claim,) = [c for c in store.claim_due("web-node", limit=10, buckets=None) if c.spec.name == name]
        assert claim.run_id is not None
        assert store.finish("web-node", [Finish(claim, Outcome(RunStatus.SUBMITTED), None)]) == [True]
        time.sleep(PICKUP * 2)  # past pickup_timeout by the database clock (SQLite's is this host's)
        watch = PickupWatch("web-node", store, [CeleryExecutor(app=APP, pickup_timeout=PICKUP)])
        assert [run.id for run in watch.look()] == [claim.run_id]
        return claim.run_id


def test_the_dashboard_shows_a_stuck_schedule_and_releases_it(tmp_path: Path, page: Page) -> None:
    config = stuck_config(tmp_path)
    run_id = hand_off_and_mark(config, "report")
    with web_server(config, TOKEN) as base:
        page.goto(base + "/login")
        page.get_by_label("Token").fill(TOKEN)
        page.get_by_label("Your name, for the action log").fill("alice")
        page.get_by_role("button", name="Log in").click()
        expect(page.locator('tr[data-schedule="report"] .status.h-stuck')).to_have_text("stuck")
        page.goto(base + "/schedules/report")
        expect(page.locator(".status.h-stuck")).to_have_text("stuck", timeout=SHOWS_WITHIN_MS)
        expect(page.locator(".health-reason")).to_contain_text("no worker reported it started")
        expect(page.locator(".health-reason")).to_contain_text("tickwork jobs release report")
        page.locator('[data-action="release"]').click()
        expect(page.locator(".flash")).to_contain_text("Stuck hand-off released")
        expect(page.locator('[data-action="release"]')).to_have_count(0)
    with tickwork.connect(config) as admin:
        row = admin.store().get_run(run_id)
        assert row is not None and row.status is RunStatus.CANCELLED
        assert (row.error or "").startswith("released by alice (session ")
        info = admin.get("report")
        assert info.health is not None and info.health.state.value == "healthy"


def test_the_api_releases_a_stuck_handoff_naming_the_caller(tmp_path: Path) -> None:
    config = stuck_config(tmp_path)
    run_id = hand_off_and_mark(config, "digest")
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Tickwork-User": "bob"}
    with client(config, TOKEN) as c:
        assert c.get("/api/schedules/digest").json()["health"]["state"] == "stuck"
        assert c.post("/api/schedules/digest/release").status_code == 401  # no token, nothing released
        done = c.post("/api/schedules/digest/release", headers=headers)
        assert done.status_code == 200, done.text
        assert done.json()["action"] == "release"
        assert done.json()["schedule"]["health"]["state"] == "healthy"
        again = c.post("/api/schedules/digest/release", headers=headers)
        assert again.status_code == 409 and "nothing to release" in again.json()["error"]
    with tickwork.connect(config) as admin:
        row = admin.store().get_run(run_id)
        assert row is not None and row.status is RunStatus.CANCELLED
        assert (row.error or "").startswith("released by bob (API token)")
