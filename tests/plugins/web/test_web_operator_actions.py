"""The dashboard's operator actions and the words a failing schedule stands out by (issue #41 §3):
re-run one failed fire, pause with a note and an end time, backfill, resume (each the admin
API's call, audited), failures grouped by error, the executor column, calendar expressions in
words, tracebacks without tickwork's frames, and the schedule form in sections with every label
in words. In-process (Starlette's test client); tests/plugins/web/test_web_operator_browser.py
drives the same actions in Chromium."""

from __future__ import annotations

import html
import logging
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import tickwork
from tests.support.webhelpers import TOKEN, client
from tickwork.structures import Outcome, RunStatus
from tickwork_web.forms import TEXT_OPTIONS, label

LOGGER = "tickwork.web.actions"


def failed_run(config: Path, name: str = "broken") -> tickwork.RunRecord:
    with tickwork.connect(config) as admin:
        [run] = admin.history(schedule=name, status=RunStatus.FAILED, limit=1)
        return run


def taken(config: Path) -> list[tuple[str, datetime, int]]:
    """The backfill queue, taken as a node takes it (one at a time: buffer_all), each ended as
    succeeded: (schedule, fire time, attempt)."""
    out = []
    with tickwork.connect(config) as admin:
        store = admin.store()
        while claims := store.take_backfills("test-node", limit=100, buckets=None):
            for claim in claims:
                out.append((claim.spec.name, claim.scheduled_for, claim.attempt))
                store.end_attempt(claim, Outcome(RunStatus.SUCCEEDED))
    return sorted(out)


def test_run_again_queues_the_failed_fire_as_its_next_attempt(
    fresh: Path, browser: tuple[TestClient, str], caplog: pytest.LogCaptureFixture
) -> None:
    c, csrf = browser
    caplog.set_level(logging.INFO, logger=LOGGER)
    run = failed_run(fresh)
    page = c.get("/schedules/broken").text
    assert f'data-action="rerun" data-run="{run.id}"' in page  # the failed row offers it
    done = c.post("/schedules/broken/rerun", data={"csrf": csrf, "run": str(run.id)})
    assert done.status_code == 303 and done.headers["location"].endswith("/schedules/broken?done=rerun")
    assert taken(fresh) == [("broken", run.scheduled_for, run.attempt + 1)]
    logged = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert any(m.startswith("action rerun on schedule 'broken' by alice") and "(run " in m for m in logged), logged
    # A fire that did not fail (here: skipped) is not run again: refused with the reason.
    with tickwork.connect(fresh) as admin:
        [skipped] = admin.history(schedule="late", status=RunStatus.SKIPPED, limit=1)
    refused = c.post("/schedules/late/rerun", data={"csrf": csrf, "run": str(skipped.id)})
    assert refused.status_code == 409 and "only a failed or timed-out fire is run again" in refused.text
    assert taken(fresh) == []


def test_pause_with_a_note_and_an_end_in_the_schedules_zone_then_resume(
    fresh: Path, browser: tuple[TestClient, str]
) -> None:
    c, csrf = browser
    # A browser's date-time field sends no offset: it is read in the schedule's zone (Europe/Oslo).
    done = c.post(
        "/schedules/nightly-report/pause",
        data={"csrf": csrf, "note": "vendor outage, ticket 4711", "until": "2030-01-02T03:04"},
    )
    assert done.status_code == 303
    with tickwork.connect(fresh) as admin:
        info = admin.get("nightly-report")
    assert (
        info.pause is not None
        and (info.pause.by or "").startswith("alice")
        and info.pause.note == "vendor outage, ticket 4711"
    )
    assert info.pause.until == datetime(2030, 1, 2, 2, 4, tzinfo=UTC)  # 03:04 in Oslo (CET)
    page = html.unescape(c.get("/schedules/nightly-report").text)
    assert "vendor outage, ticket 4711" in page and "2030-01-02 03:04:00 CET" in page
    assert 'data-action="resume"' in page
    assert c.post("/schedules/nightly-report/resume", data={"csrf": csrf}).status_code == 303
    with tickwork.connect(fresh) as admin:
        assert admin.get("nightly-report").pause is None
    refused = c.post("/schedules/late/pause", data={"csrf": csrf, "note": " "})
    assert refused.status_code == 409 and "a note saying why is required" in refused.text


def test_backfill_from_an_age_to_now(fresh: Path, browser: tuple[TestClient, str]) -> None:
    c, csrf = browser
    done = c.post("/schedules/late/backfill", data={"csrf": csrf, "from": "3d", "to": ""})
    assert done.status_code == 303 and done.headers["location"].endswith("done=backfill")
    queued = taken(fresh)
    # "30 4 * * *" over the last three days: three fire times (the history holds none of them).
    assert len(queued) == 3 and all(t.hour == 4 and t.minute == 30 and a == 1 for _, t, a in queued), queued
    bad = c.post("/schedules/late/backfill", data={"csrf": csrf, "from": "yesterday"})
    assert bad.status_code == 409 and "not an ISO-8601 time or a duration" in bad.text


def test_the_api_pauses_and_backfills_as_the_forms_do(fresh: Path) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Tickwork-User": "bob"}
    with client(fresh, TOKEN) as c:
        paused = c.post("/api/schedules/late/pause", json={"note": "maintenance", "until": "2h"}, headers=headers)
        assert paused.status_code == 200, paused.text
        body = paused.json()
        assert body["schedule"]["pause"]["note"] == "maintenance" and body["done"].startswith("Paused until ")
        unknown = c.post("/api/schedules/late/snooze", headers=headers)
        assert unknown.status_code == 404 and "pause" in unknown.json()["error"]
        filled = c.post("/api/schedules/late/backfill", json={"from": "2d"}, headers=headers)
        assert filled.status_code == 200 and filled.json()["done"].startswith("Backfill queued: 2 of the 2")


def test_failures_are_grouped_by_error_on_the_runs_page(fresh: Path, browser: tuple[TestClient, str]) -> None:
    c, _ = browser
    with tickwork.connect(fresh) as admin:
        admin.add("also-broken", "0 5 * * *", "tests.support.jobs_for_tests:boom")
    page = c.get("/runs").text
    groups = re.findall(r'<tr data-error-group="\d+" data-count="(\d+)">\s*<td class="err"><code>([^<]*)</code>', page)
    assert groups == [("1", "ValueError: the job failed on purpose")]
    assert '<a href="/schedules/broken">broken</a>' in page.split('id="failure-groups"')[1].split("</section>")[0]


def test_executor_column_and_calendar_expressions_in_words(fresh: Path, browser: tuple[TestClient, str]) -> None:
    c, _ = browser
    with tickwork.connect(fresh) as admin:
        # What `tickwork import` writes for Celery's "first Friday of the month".
        admin.add("first-friday", "Fri *-*-01..07 09:00:00", "tests.support.jobs_for_tests:record", kind="calendar")
    page = c.get("/").text
    assert "<th>Executor</th>" in page
    assert re.search(
        r'data-schedule="first-friday".*?<td data-label="Executor" class="executor">local</td>', page, re.S
    )
    row = page.split('data-schedule="first-friday"')[1].split("</tr>")[0]
    assert "first Friday of the month at 09:00" in row and "<code>Fri *-*-01..07 09:00:00</code>" in row


def test_tracebacks_are_shown_without_tickworks_frames(fresh: Path, browser: tuple[TestClient, str]) -> None:
    c, _ = browser
    recorded = failed_run(fresh).error or ""
    own = [line for line in recorded.splitlines() if line.startswith("  File ") and "tickwork" in line.split('"')[1]]
    assert own  # the record keeps how tickwork called the job
    page = html.unescape(c.get("/schedules/broken").text)
    box = page.split('id="last-error"')[1].split("</section>")[0]
    assert "ValueError: the job failed on purpose" in box and 'jobs_for_tests.py", line' in box
    assert not any(line.strip() in box for line in own)
    history = page.split('id="history"')[1]
    assert 'jobs_for_tests.py", line' in history and not any(line.strip() in history for line in own)


def test_the_form_is_grouped_with_every_label_in_words_and_its_key_beside(browser: tuple[TestClient, str]) -> None:
    c, _ = browser
    page = c.get("/new").text
    groups = re.findall(r'<fieldset class="group" data-group="([a-z ]+)">', page)
    assert groups[:4] == ["when", "what", "limits", "alerts"]
    for option in TEXT_OPTIONS:
        words = label(option)
        assert words != option.name and "_" not in words, option.name  # words, not the key
        shown = re.findall(
            rf'<label for="f-{option.name}">([^<]*)</label> <code class="optkey"[^>]*>{option.name}</code>', page
        )
        assert [html.unescape(s) for s in shown] == [words], option.name
    when = page.split('data-group="when"')[1].split("</fieldset>")[0]
    assert 'id="f-expression"' in when and 'id="f-tz"' in when and 'id="f-timeout"' not in when
    alerts = page.split('data-group="alerts"')[1].split("</fieldset>")[0]
    assert 'id="f-pause_after_failures"' in alerts
