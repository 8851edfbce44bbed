"""The dashboard in a real Chromium against real processes: a SQLite store, a running node
(``tickwork run``) and ``tickwork web``. The screenshots land in docs/images/ for docs/web.md when
``TICKWORK_DOCS_SCREENSHOTS=1`` is set, else in a temporary directory (a test run leaves the
checkout unchanged)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.support.browser import IMAGES, SHOWS_WITHIN_MS
from tests.support.webhelpers import TOKEN, web_server


def shot(page: Page, name: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / name), full_page=True)


def test_run_now_shows_the_run_without_reloading(fresh: Path, node: None, page: Page) -> None:
    with web_server(fresh, TOKEN) as base:
        page.goto(base + "/")
        rows = page.locator("table#schedules tr[data-schedule]")
        expect(rows).to_have_count(4)
        expect(page.locator('tr[data-schedule="broken"] .status.s-failed')).to_be_visible()
        expect(page.locator('tr[data-schedule="paused"]')).to_contain_text("disabled")
        shot(page, "web-schedules.png")

        page.get_by_role("link", name="Log in for actions").click()
        page.get_by_label("Token").fill(TOKEN)
        page.get_by_label("Your name, for the action log").fill("alice")
        page.get_by_role("button", name="Log in").click()
        expect(page.locator(".flash")).to_contain_text("Logged in")

        page.get_by_role("link", name="nightly-report").click()
        history = page.locator("#history")
        expect(history).to_contain_text("No runs")
        page.get_by_role("button", name="Run now").click()
        expect(page.locator(".flash")).to_contain_text("Run requested")
        # From here on the page is never reloaded: a marker on window would not survive a reload.
        page.evaluate("window.tickworkTestMarker = 'same page'")
        expect(history.locator('tr[data-status="succeeded"]')).to_have_count(1, timeout=SHOWS_WITHIN_MS)
        assert page.evaluate("window.tickworkTestMarker") == "same page"
        expect(history.locator('tr[data-status="succeeded"]')).to_contain_text("web-node")
        shot(page, "web-schedule.png")

        page.goto(base + "/schedules/broken")
        expect(page.locator("#last-error pre")).to_contain_text("ValueError: the job failed on purpose")
        shot(page, "web-schedule-error.png")

        page.goto(base + "/nodes")
        node_row = page.locator('tr[data-node="web-node"]')
        expect(node_row).to_contain_text("live")
        expect(node_row).to_contain_text("all")  # single membership: it owns every bucket

        page.goto(base + "/runs")
        expect(page.locator("table.runs")).to_contain_text("nightly-report")


def test_without_a_token_the_dashboard_is_read_only(fresh: Path, page: Page) -> None:
    with web_server(fresh, None) as base:
        page.goto(base + "/schedules/broken")
        expect(page.locator("header")).to_contain_text("read-only")
        expect(page.locator("[data-action]")).to_have_count(0)
        expect(page.get_by_role("link", name="Log in for actions")).to_have_count(0)
        expect(page.locator("#last-error")).to_contain_text("Traceback")
        answer = page.request.post(base + "/api/schedules/broken/trigger", headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status == 403 and "read-only" in answer.json()["error"]
        form = page.request.post(base + "/schedules/broken/trigger", form={"csrf": "x"})
        assert form.status == 403


def test_with_a_token_the_api_wants_it(fresh: Path, page: Page) -> None:
    with web_server(fresh, TOKEN) as base:
        page.goto(base + "/")
        expect(page.get_by_role("link", name="Log in for actions")).to_be_visible()
        assert page.request.post(base + "/api/schedules/broken/disable").status == 401
        wrong = page.request.post(base + "/api/schedules/broken/disable", headers={"Authorization": "Bearer nope"})
        assert wrong.status == 403
        # Not logged in: the browser's own POST is refused too, and the schedule is unchanged.
        assert page.request.post(base + "/schedules/broken/disable", form={"csrf": "x"}).status == 401
        page.goto(base + "/schedules/broken")
        expect(page.locator("[data-action]")).to_have_count(0)
        expect(page.locator("dl.def")).to_contain_text("idle")
