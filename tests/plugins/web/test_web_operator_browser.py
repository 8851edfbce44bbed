"""The operator's new actions in a real Chromium against ``tickwork web`` (issue #41 §3): run one
failed fire again, pause with a note and an end time, backfill from an age; and what they leave
in the store (through the admin API, as the CLI would read it)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from playwright.sync_api import Page, expect

import tickwork
from tests.support.webhelpers import TOKEN, web_server
from tickwork.structures import Outcome, RunStatus


def log_in(page: Page, base: str) -> None:
    page.goto(base + "/login")
    page.get_by_label("Token").fill(TOKEN)
    page.get_by_label("Your name, for the action log").fill("alice")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".flash")).to_contain_text("Logged in")


def test_run_again_pause_with_note_and_end_and_backfill(fresh: Path, page: Page) -> None:
    with tickwork.connect(fresh) as admin:
        [failed] = admin.history(schedule="broken", status=RunStatus.FAILED, limit=1)
    with web_server(fresh, TOKEN) as base:
        log_in(page, base)

        # Run one failed fire again, from its row of the history.
        page.goto(base + "/schedules/broken")
        expect(page.locator("#last-error pre")).to_contain_text("ValueError: the job failed on purpose")
        page.locator(f'[data-action="rerun"][data-run="{failed.id}"]').click()
        expect(page.locator(".flash")).to_contain_text("queued to run again")

        # Pause with a note and an end, typed in the schedule's zone (Europe/Oslo).
        page.goto(base + "/schedules/nightly-report")
        page.get_by_text("Pause with a note…").click()
        page.locator("#pause-note-input").fill("vendor outage, ticket 4711")
        page.locator("#pause-until-input").fill("2030-01-02T03:04")
        page.locator('#pause-form [data-action="pause"]').click()
        expect(page.locator(".flash")).to_contain_text("Schedule paused")
        expect(page.locator("#pause-note")).to_contain_text("vendor outage, ticket 4711")
        expect(page.locator("#pause-until")).to_contain_text("2030-01-02 03:04:00 CET")
        expect(page.locator('[data-action="resume"]')).to_be_visible()

        # Backfill the last two days of "late" (30 4 * * *).
        page.goto(base + "/schedules/late")
        page.get_by_text("Backfill past fire times…").click()
        page.locator("#backfill-from").fill("2d")
        page.locator('#backfill-form [data-action="backfill"]').click()
        expect(page.locator(".flash")).to_contain_text("Backfill queued")

    with tickwork.connect(fresh) as admin:
        paused = admin.get("nightly-report").pause
        assert paused is not None and paused.until == datetime(2030, 1, 2, 2, 4, tzinfo=UTC)
        assert paused.note == "vendor outage, ticket 4711" and (paused.by or "").startswith("alice")
        store = admin.store()
        queued = []
        while claims := store.take_backfills("test-node", limit=10, buckets=None):
            for claim in claims:
                queued.append((claim.spec.name, claim.scheduled_for, claim.attempt))
                store.end_attempt(claim, Outcome(RunStatus.SUCCEEDED))
    rerun = [q for q in queued if q[0] == "broken"]
    assert rerun == [("broken", failed.scheduled_for, failed.attempt + 1)]
    late = [q for q in queued if q[0] == "late"]
    assert len(late) == 2 and all(t.hour == 4 and t.minute == 30 for _, t, _ in late), queued
