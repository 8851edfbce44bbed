"""The operator's dashboard over HTTP (Starlette's TestClient on the real ASGI app and a real
SQLite store whose history a real node wrote): the summary strip, actions on a selection, the
create and edit form (validation by the admin API, the preview in the schedule's zone, CSRF,
the action log), attempts grouped per fire, the charts and the ring ownership on the nodes page.
The same things in a real Chromium: test_web_dashboard_browser.py."""

from __future__ import annotations

import html as htmllib
import logging
import re
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import tickwork
import tickwork_web
from tests.support.servers.configs import ConfigFor
from tests.support.webhelpers import BOOM, RECORD, TOKEN, client, form, populate, with_declared_jobs, write_config
from tickwork.config import load, parse
from tickwork.node import Node
from tickwork.structures import BUCKETS, FAILING, Fault, Finish, Outcome, RunRecord, RunStatus
from tickwork_web.charts import Chart, chart
from tickwork_web.memo import Memo
from tickwork_web.summary import OVERDUE_AFTER, fires, health_counts, health_of


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="tickwork.web.actions")
    return caplog


def tile(page: str, key: str) -> int:
    found = re.search(rf'data-(?:health|summary)="{key}"[^>]*>(?:<a [^>]*>)?<b>(\d+)\+?</b>', page)
    assert found, page
    return int(found.group(1))


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tickwork.web.actions"]


# -- summary strip ----------------------------------------------------------------------------------


def test_summary_strip_counts_health_runs_and_nodes(fresh: Path) -> None:
    with tickwork.connect(fresh) as admin:
        failing = [i.name for i in admin.list() if i.enabled and i.last_status in FAILING]
        paused = [i.name for i in admin.list() if not i.enabled]
        recent = admin.history(since=timedelta(hours=1))
    assert failing == ["broken"] and paused == ["paused"]  # what populate() made
    with client(fresh, TOKEN) as c:
        page = c.get("/").text
        assert tile(page, "failing") == 1 and tile(page, "paused") == 1
        assert tile(page, "parked") == 0 and tile(page, "overdue") == 0
        runs = [r for r in recent if r.status is not RunStatus.SKIPPED]
        assert tile(page, "runs") == len(runs) and len(runs) >= 1
        assert tile(page, "failures") == sum(1 for r in runs if r.status in FAILING) == 1
        assert tile(page, "nodes") == 0  # populate()'s node left cleanly
        assert 'id="summary"' in c.get("/?fragment=1").text  # the strip refreshes with the table
        # The strip is kept a few seconds, but an action through the dashboard shows at once.
        assert c.post("/api/schedules/broken/disable", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        page = c.get("/").text
        assert tile(page, "failing") == 0 and tile(page, "paused") == 2


def test_overdue_and_parked_schedules_are_counted(tmp_path: Path) -> None:
    # The dashboard's configuration has an http executor the node lacks: the node parks the
    # schedule that needs it ("not configured on node").
    config = write_config(tmp_path, extra="[executor.http]\n")
    node_config = tmp_path / "node.toml"
    node_config.write_text(config.read_text().replace("[executor.http]\n", ""), encoding="utf-8")
    with tickwork.connect(config) as admin:
        admin.add("hook", "0 3 * * *", "https://example.invalid/hook", executor="http")
        admin.add("soon", "0 4 * * *", RECORD)
        admin.add("later", "0 5 * * *", RECORD)
        admin.trigger("hook")
        admin.trigger("soon")
    node = Node(load(node_config))
    node.open()
    try:
        node.engine.tick()
    finally:
        node.shutdown()
    with tickwork.connect(config) as admin:
        assert admin.get("hook").fault is not None and "http" in (admin.get("hook").fault or "")
        admin.trigger("later")  # due now, and no node runs: overdue once OVERDUE_AFTER has passed
        now = admin.store().now()
        assert health_counts(admin, now) == {"failing": 0, "overdue": 0, "late": 0, "paused": 0, "parked": 1}
        later = now + OVERDUE_AFTER + timedelta(seconds=1)
        assert health_counts(admin, later) == {"failing": 0, "overdue": 1, "late": 0, "paused": 0, "parked": 1}
        assert [health_of(admin.get(n), later) for n in ("hook", "soon", "later")] == ["parked", "healthy", "overdue"]
    with client(config, None) as c:
        page = c.get("/").text
        assert tile(page, "parked") == 1
        assert re.search(
            r'data-schedule="hook".*?<span class="status s-failed" title="[^"]*http[^"]*">parked</span>', page, re.S
        )


def test_a_schedule_parked_after_a_successful_run_is_counted_parked(tmp_path: Path) -> None:
    # The engine parks a schedule after a run that succeeded when its next fire cannot be
    # computed (FollowUps.parked keeps the run's own outcome); the store's park, as it calls it.
    config = write_config(tmp_path)
    with tickwork.connect(config) as admin:
        admin.add("ok-then-parked", "0 3 * * *", RECORD)
        admin.add("failed-then-parked", "0 4 * * *", RECORD)
        admin.add("plain", "0 5 * * *", RECORD)
        admin.trigger("ok-then-parked")
        admin.trigger("failed-then-parked")
        store = admin.store()
        claims = {c.spec.name: c for c in store.claim_due("web-node", limit=10, buckets=None)}
        assert set(claims) == {"ok-then-parked", "failed-then-parked"}
        ended = [
            (claims["ok-then-parked"], Outcome(RunStatus.SUCCEEDED, error="schedule parked after the run: no next")),
            (claims["failed-then-parked"], Outcome(RunStatus.FAILED, error="not run: no trigger (schedule parked)")),
        ]
        assert store.park("web-node", [(Finish(c, o, None), Fault("cannot plan")) for c, o in ended]) == [True, True]
        assert admin.get("ok-then-parked").last_status is RunStatus.SUCCEEDED
        health = {i.name: i.health.state.value for i in admin.list() if i.health is not None}
        assert health == {"ok-then-parked": "parked", "failed-then-parked": "parked", "plain": "healthy"}
        assert admin.count(parked=True) == 2 and admin.count(health="parked") == 2
        now = admin.store().now()
        assert health_counts(admin, now) == {"failing": 0, "overdue": 0, "late": 0, "paused": 0, "parked": 2}
    with client(config, None) as c:
        page = c.get("/").text
        assert tile(page, "parked") == 2 and tile(page, "failing") == 0


# -- actions on a selection -----------------------------------------------------------------------


def test_selection_enable_disable_trigger_remove(
    browser: tuple[TestClient, str], fresh: Path, logged: pytest.LogCaptureFixture
) -> None:
    c, csrf = browser
    page = c.get("/").text
    assert 'form="selection"' in page and 'data-action="edit"' in page  # checkboxes and row actions
    done = c.post("/selection", data={"csrf": csrf, "action": "disable", "name": ["broken", "late"]})
    assert done.status_code == 303 and done.headers["location"] == "/?action=disable&n=2&done=selection"
    assert "Disabled: 2 schedules." in c.get(done.headers["location"]).text
    with tickwork.connect(fresh) as admin:
        assert not admin.get("broken").enabled and not admin.get("late").enabled
    logs = messages(logged)
    assert any(
        re.match(r"action disable on schedule 'late' by alice \(session \w+\) from .* \(selection of 2\): ok", m)
        for m in logs
    ), logs

    # Run now is per schedule: the disabled one is refused, the other still runs.
    refused = c.post("/selection", data={"csrf": csrf, "action": "trigger", "name": ["broken", "nightly-report"]})
    assert refused.status_code == 409
    text = htmllib.unescape(refused.text)
    assert "1 done. Refused 1: broken: schedule 'broken' is disabled" in text
    with tickwork.connect(fresh) as admin:
        next_fire = admin.get("nightly-report").next_fire
        assert next_fire is not None and next_fire <= admin.store().now()
    assert any(
        "action trigger on schedule 'broken'" in m and "refused: schedule 'broken' is disabled" in m
        for m in messages(logged)
    )

    # Remove is all or none: one unknown name and nothing is removed.
    stale = c.post("/selection", data={"csrf": csrf, "action": "remove", "name": ["late", "gone"]})
    assert stale.status_code == 409 and "Nothing was changed" in stale.text
    with tickwork.connect(fresh) as admin:
        admin.get("late")
    assert c.post("/selection", data={"csrf": csrf, "action": "enable", "name": ["broken", "late"]}).status_code == 303
    with tickwork.connect(fresh) as admin:
        assert admin.get("broken").enabled and admin.get("late").enabled


def test_selection_needs_login_csrf_and_a_choice(browser: tuple[TestClient, str], fresh: Path) -> None:
    c, csrf = browser
    assert c.post("/selection", data={"action": "disable", "name": "broken"}).status_code == 403  # no CSRF token
    assert c.post("/selection", data={"csrf": "0" * 64, "action": "disable", "name": "broken"}).status_code == 403
    assert c.post("/selection", data={"csrf": csrf, "action": "disable"}).status_code == 400
    assert c.post("/selection", data={"csrf": csrf, "action": "explode", "name": "broken"}).status_code == 400
    with tickwork.connect(fresh) as admin:
        assert admin.get("broken").enabled
    with client(fresh, TOKEN) as anonymous:
        assert (
            anonymous.post("/selection", data={"csrf": csrf, "action": "disable", "name": "broken"}).status_code == 401
        )
        assert 'form="selection"' not in anonymous.get("/").text
    with client(fresh, None) as reader:
        assert reader.post("/selection", data={"csrf": csrf, "action": "disable", "name": "broken"}).status_code == 403
        assert reader.get("/new").status_code == 403


# -- create and edit ------------------------------------------------------------------------------


def error_of(page: str, field: str) -> str:
    found = re.search(rf'data-error="{field}">([^<]*)<', page)
    assert found, page
    return htmllib.unescape(found.group(1))


def test_create_validates_through_the_admin_api(browser: tuple[TestClient, str], fresh: Path) -> None:
    c, csrf = browser
    bad = c.post("/new", data=form(csrf, do="preview", name="report", expression="61 * * * *", target=RECORD))
    assert bad.status_code == 400
    assert "minute" in error_of(bad.text, "expression") and 'value="61 * * * *"' in bad.text  # the input is kept
    assert "preview-fires" not in bad.text
    cases = {
        "retries": ({"retries": "-1"}, "must be >= 0"),
        "args": ({"args": "[1]"}, "must be a JSON object"),
        "timeout": ({"timeout": "soon"}, "soon"),
        "name": ({"name": "broken"}, "already exists"),
        "target": ({"target": ""}, "required"),
    }
    for field, (change, words) in cases.items():
        fields = {"name": "report", "expression": "0 3 * * *", "target": RECORD, **change}
        page = c.post("/new", data=form(csrf, do="save", **fields))
        assert page.status_code == 400 and words in error_of(page.text, field), field
    unimportable = c.post(
        "/new", data=form(csrf, do="save", name="report", expression="0 3 * * *", target="no_such_module_x:run")
    )
    assert unimportable.status_code == 400 and "no_such_module_x" in htmllib.unescape(unimportable.text)
    with tickwork.connect(fresh) as admin:
        assert "report" not in [i.name for i in admin.list()]


def test_the_form_refuses_an_executor_the_live_node_does_not_run(tmp_path: Path) -> None:
    # The dashboard's configuration has [executor.http]; the live node (a real one, embedded)
    # does not: the form says so, naming the node and what it runs, and saves nothing.
    config = write_config(tmp_path, extra="[executor.http]\n")
    node_config = tmp_path / "node.toml"
    node_config.write_text(config.read_text().replace("[executor.http]\n", ""), encoding="utf-8")
    node = Node(load(node_config))
    node.start()
    try:
        with client(config, TOKEN) as c:
            assert c.post("/login", data={"token": TOKEN, "name": "alice"}).status_code == 303
            found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/").text)
            assert found
            fields = {
                "name": "hook",
                "expression": "0 3 * * *",
                "target": "https://example.invalid/h",
                "executor": "http",
            }
            page = c.post("/new", data=form(found.group(1), do="save", **fields))
            assert page.status_code == 400
            shown = re.search(r'id="form-error">([^<]*)<', page.text)
            assert shown, page.text
            assert htmllib.unescape(shown.group(1)).startswith(
                "executor 'http' is not configured on live node web-node (runs: local)"
            )
            nodes_page = c.get("/nodes").text
            assert re.search(r'<td data-label="Executors" class="executors">local</td>', nodes_page)
            assert c.get("/api/nodes").json()["nodes"][0]["executors"] == ["local"]
        with tickwork.connect(config) as admin:
            assert admin.names() == []
    finally:
        node.stop()


def test_create_previews_in_the_zone_then_saves_and_logs(
    browser: tuple[TestClient, str], fresh: Path, logged: pytest.LogCaptureFixture
) -> None:
    c, csrf = browser
    fields = {"name": "report", "expression": "30 3 * * *", "target": RECORD, "tz": "Europe/Oslo", "retries": "2"}
    shown = c.post("/new", data=form(csrf, do="preview", **fields))
    assert shown.status_code == 200, shown.text
    listed = re.findall(r'<ol class="fires" id="preview-fires">(.*?)</ol>', shown.text, re.S)[0]
    times = [datetime.fromisoformat(t) for t in re.findall(r'datetime="([^"]+)"', listed)]
    expected = tickwork.next_fire_times("30 3 * * *", tz="Europe/Oslo", after=times[0] - timedelta(seconds=1), n=10)
    assert times == expected
    local = re.findall(r'<time class="local"[^>]*>([^<]+)</time> <span class="utc">([^<]+)</span>', listed)
    assert len(local) == 10
    for (zoned, utc), when in zip(local, times, strict=True):
        assert re.fullmatch(r"\d{4}-\d\d-\d\d 03:30:00 CES?T", zoned)  # the expression's 03:30, in Oslo
        assert utc == when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    with tickwork.connect(fresh) as admin:
        assert "report" not in [i.name for i in admin.list()]  # a preview saves nothing
    saved = c.post("/new", data=form(csrf, do="save", **fields))
    assert saved.status_code == 303 and saved.headers["location"] == "/schedules/report?done=create"
    with tickwork.connect(fresh) as admin:
        info = admin.get("report")
    assert (info.expression, info.timezone, info.retries, info.enabled) == ("30 3 * * *", "Europe/Oslo", 2, True)
    assert any(
        re.match(r"action create on schedule 'report' by alice \(session \w+\) from .*: ok", m)
        for m in messages(logged)
    )
    page = c.get(saved.headers["location"]).text
    assert "Schedule created." in page and "every day at 03:30" in page


def test_edit_keeps_what_is_not_changed(
    browser: tuple[TestClient, str], fresh: Path, logged: pytest.LogCaptureFixture
) -> None:
    c, csrf = browser
    page = c.get("/edit/nightly-report").text
    assert 'value="0 2 * * *"' in page and 'value="Europe/Oslo"' in page and 'name="name"' not in page
    fields = dict(re.findall(r'<input id="f-\w+" type="text" name="(\w+)" value="([^"]*)"', page))
    fields = {k: htmllib.unescape(v) for k, v in fields.items()}
    bad = c.post("/edit/nightly-report", data=form(csrf, do="save", **{**fields, "expression": "0 25 * * *"}))
    assert bad.status_code == 400 and "hour" in error_of(bad.text, "expression")
    saved = c.post("/edit/nightly-report", data=form(csrf, do="save", **{**fields, "expression": "15 4 * * *"}))
    assert saved.status_code == 303, re.findall(r"class=\"(?:field-)?error[^>]*>([^<]*)", saved.text)
    assert saved.headers["location"] == "/schedules/nightly-report?done=edit"
    with tickwork.connect(fresh) as admin:
        info = admin.get("nightly-report")
    assert (info.expression, info.timezone, info.target) == ("15 4 * * *", "Europe/Oslo", RECORD)
    logs = messages(logged)
    assert any("action edit on schedule 'nightly-report'" in m and "refused: expression:" in m for m in logs), logs
    assert any(re.match(r"action edit on schedule 'nightly-report' by alice .*: ok$", m) for m in logs), logs
    assert c.get("/edit/nope").status_code == 404
    # The kind is blank when the expression says it: changing to a calendar event just works.
    assert re.search(r'<option value="cron"\s*>', c.get("/edit/nightly-report").text)  # not selected
    calendar = {**fields, "expression": "Mon..Fri 09:00"}
    assert c.post("/edit/nightly-report", data=form(csrf, do="save", **calendar)).status_code == 303
    with tickwork.connect(fresh) as admin:
        info = admin.get("nightly-report")
    assert (info.kind, info.expression, info.timezone) == ("calendar", "Mon..Fri 09:00", "Europe/Oslo")


def test_a_schedule_declared_in_code_is_not_edited_here(tmp_path: Path) -> None:
    config = with_declared_jobs(tmp_path)
    with client(config, TOKEN) as c:
        assert c.post("/login", data={"token": TOKEN}).status_code == 303
        page = c.get("/schedules/hourly-report").text
        assert "Run now" in page and 'data-action="edit"' not in page
        refused = c.get("/edit/hourly-report")
        assert refused.status_code == 409 and "declared in code (tests.support.declared_jobs)" in htmllib.unescape(
            refused.text
        )
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        assert csrf
        posted = c.post(
            "/edit/hourly-report", data=form(csrf.group(1), do="save", expression="0 5 * * *", target=RECORD)
        )
        assert posted.status_code == 409
    with tickwork.connect(config) as admin:
        assert admin.get("hourly-report").expression == "0 * * * *"


def test_form_posts_need_the_csrf_token(browser: tuple[TestClient, str], fresh: Path) -> None:
    c, csrf = browser
    fields = {"name": "sneaky", "expression": "0 3 * * *", "target": RECORD, "do": "save"}
    assert c.post("/new", data=fields).status_code == 403
    assert c.post("/new", data={**fields, "csrf": "f" * 64}).status_code == 403
    assert c.post("/edit/broken", data={**fields, "expression": "0 4 * * *"}).status_code == 403
    with client(fresh, TOKEN) as anonymous:
        assert anonymous.post("/new", data={**fields, "csrf": csrf}).status_code == 401
        assert "Log in" in anonymous.get("/new").text and 'id="schedule-form"' not in anonymous.get("/new").text
    with tickwork.connect(fresh) as admin:
        assert "sneaky" not in [i.name for i in admin.list()]
        assert admin.get("broken").expression == "0 3 * * *"


# -- attempts grouped per fire, charts ---------------------------------------------------------------


def run_record(
    id: int, schedule: str, minute: int, attempt: int, status: RunStatus, error: str | None = None
) -> RunRecord:
    at = datetime(2026, 11, 24, 6, minute, tzinfo=UTC)
    return RunRecord(id, schedule, at, at, at + timedelta(seconds=attempt), "n1", status, error, attempt)


def test_attempts_of_one_fire_are_one_group() -> None:
    records = [
        run_record(6, "a", 30, 3, RunStatus.FAILED, "third"),
        run_record(5, "a", 30, 2, RunStatus.FAILED, "second"),
        run_record(4, "a", 30, 1, RunStatus.FAILED, "first"),
        run_record(3, "b", 30, 1, RunStatus.SUCCEEDED),
        run_record(2, "a", 15, 2, RunStatus.SUCCEEDED),
        run_record(1, "a", 15, 1, RunStatus.FAILED, "once"),
    ]
    groups = fires(records)
    assert [(g.latest.id, len(g.attempts)) for g in groups] == [(6, 3), (3, 1), (2, 2)]
    assert [r.error for r in groups[0].errors] == ["first", "second", "third"]
    assert groups[2].latest.status is RunStatus.SUCCEEDED and groups[2].first.attempt == 1


def test_chart_counts_runs_failures_and_the_longest_run() -> None:
    start = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
    records = [
        run_record(1, "a", 5, 1, RunStatus.SUCCEEDED),
        run_record(2, "a", 6, 3, RunStatus.FAILED, "x"),
        run_record(3, "a", 50, 2, RunStatus.SUCCEEDED),
        run_record(4, "a", 51, 1, RunStatus.SKIPPED),
    ]
    drawn = chart(records, start, start + timedelta(hours=1), buckets=4)
    assert (drawn.runs, drawn.failures, drawn.most_runs, drawn.longest) == (3, 1, 2, 3.0)
    assert len(drawn.bars) == 2 and len(drawn.marks) == 2  # the empty buckets draw nothing
    first, last = drawn.bars
    assert first.ok == first.failed > 0 and last.failed == 0 and last.ok == first.ok  # 1 of 2 failed; 1 of 2
    assert "2 runs, 1 failed, longest 3.00 s" in first.title
    assert chart([], start, start + timedelta(hours=1)).bars == []


def test_grouped_attempts_and_charts_on_the_pages(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with tickwork.connect(config) as admin:
        admin.add("flaky", "0 3 * * *", BOOM, retries=2, retry_backoff=0)
        admin.trigger("flaky")
    node = Node(load(config))
    node.start()
    try:
        deadline = time.monotonic() + 30
        with tickwork.connect(config) as admin:
            while time.monotonic() < deadline:  # three attempts, the last one ended
                seen = admin.history(schedule="flaky")
                if len(seen) == 3 and all(r.status is not RunStatus.RUNNING for r in seen):
                    break
                time.sleep(0.1)
            attempts = admin.history(schedule="flaky")
    finally:
        node.shutdown()
    assert [r.attempt for r in attempts] == [3, 2, 1] and all(r.status is RunStatus.FAILED for r in attempts)
    with client(config, None) as c:
        page = c.get("/schedules/flaky").text
        history = re.findall(r'<section id="history">(.*?)</section>', page, re.S)[0]
        rows = re.findall(r'<tr data-run="(\d+)" data-status="(\w+)" data-attempts="(\d+)"', history)
        assert rows == [(str(attempts[0].id), "failed", "3")]
        assert "3 attempts" in history and len(re.findall(r'class="attempt-error" data-attempt="\d"', history)) == 3
        assert re.search(r'<figure class="chart" data-runs="3" data-failures="3">', page)
        runs = c.get("/runs").text
        assert re.search(r'<figure class="chart" data-runs="3" data-failures="3">', runs)
        assert "<svg" in runs and "cdn" not in runs.lower()
        assert c.get("/api/schedules/flaky").json()["fires"][0]["attempts"][2]["attempt"] == 1


# -- nodes: ring ownership --------------------------------------------------------------------------


def test_nodes_page_explains_two_owners_per_bucket(tmp_path: Path) -> None:
    path = str(tmp_path / "ring.db")
    nodes: list[Node] = []
    ring = {"membership": {"plugin": "hashring", "owners": 2}, "store": {"path": path}}
    app = tickwork_web.app({**ring, "scheduler": {"node_id": "viewer"}})
    try:
        for name in ("ring-a", "ring-b", "ring-c"):
            node = Node(parse({**ring, "scheduler": {"node_id": name}}))
            node.start()
            nodes.append(node)
        with TestClient(app) as c:
            page = c.get("/nodes").text
    finally:
        stoppers = [threading.Thread(target=n.shutdown) for n in nodes]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
    text = re.sub(r"<[^>]+>", "", page)
    assert "each bucket has 2 owners" in text and f"{BUCKETS:,} hash buckets" in text
    assert f"add up to 2 \u00d7 {BUCKETS:,} = {2 * BUCKETS:,}, not {BUCKETS:,}." in text
    assert "every node owns every bucket" not in text  # three nodes share them
    owned = [int(n.replace(",", "")) for n in re.findall(rf"([\d,]+) of {BUCKETS:,}", text)]
    assert len(owned) == 3 and sum(owned) == 2 * BUCKETS and all(0 < n < BUCKETS for n in owned)
    with TestClient(app) as c:  # the nodes left cleanly: nobody owns anything
        assert "No node is live: no bucket has an owner" in re.sub(r"<[^>]+>", "", c.get("/nodes").text)


def test_nodes_page_explains_a_membership_that_does_not_split(fresh: Path) -> None:
    with client(fresh, None) as c:
        text = re.sub(r"<[^>]+>", "", c.get("/nodes").text)
    assert "Membership single: it does not split the schedules" in text


def test_the_overall_chart_is_kept_for_its_time() -> None:
    start = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)
    now = [0.0]
    memo: Memo[Chart] = Memo(30, clock=lambda: now[0])
    made: list[int] = []

    def make() -> Chart:
        made.append(1)
        return chart(
            [run_record(len(made), "a", 5, 1, RunStatus.SUCCEEDED)] * len(made), start, start + timedelta(hours=1)
        )

    assert memo.get(make).runs == 1
    now[0] = 29.9
    assert memo.get(make).runs == 1 and len(made) == 1
    now[0] = 30.0
    assert memo.get(make).runs == 2 and len(made) == 2
    memo.forget()
    assert memo.get(make).runs == 3


@pytest.mark.parametrize("backend", ["postgres", "mysql"])
def test_strip_selection_and_form_on_server_databases(tmp_path: Path, config_for: ConfigFor, backend: str) -> None:
    store = config_for(backend, migrated=True).toml()
    config = tmp_path / "tickwork.toml"
    config.write_text(f'[scheduler]\nnode_id = "db-web-node"\n\n{store}\n[executor.local]\n', encoding="utf-8")
    populate(config)
    with client(config, TOKEN) as c:
        assert c.post("/login", data={"token": TOKEN, "name": "alice"}).status_code == 303
        page = c.get("/").text
        assert (tile(page, "failing"), tile(page, "paused"), tile(page, "parked")) == (1, 1, 0)
        found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        assert found
        csrf = found.group(1)
        done = c.post("/selection", data={"csrf": csrf, "action": "disable", "name": ["broken", "late"]})
        assert done.status_code == 303
        assert tile(c.get("/").text, "paused") == 3
        fields = {"name": "report", "expression": "*/10 * * * * *", "target": RECORD, "tz": "Asia/Tokyo"}
        shown = c.post("/new", data=form(csrf, do="preview", **fields)).text
        assert "every 10 seconds" in shown and len(re.findall(r"JST", shown)) == 10
        assert c.post("/new", data=form(csrf, do="save", **fields)).status_code == 303
    with tickwork.connect(config) as admin:
        assert admin.get("report").timezone == "Asia/Tokyo"
        assert not admin.get("broken").enabled and not admin.get("late").enabled


def test_edit_keeps_several_expressions_and_exclusions(browser: tuple[TestClient, str], fresh: Path) -> None:
    c, csrf = browser
    with tickwork.connect(fresh) as admin:
        admin.add("weekdays", "0 9 * * *", RECORD, also=["0 17 * * *"], exclude=["Sat,Sun", "*-12-25"])
    page = c.get("/edit/weekdays").text
    fields = dict(re.findall(r'<input id="f-\w+" type="text" name="(\w+)" value="([^"]*)"', page))
    fields = {k: htmllib.unescape(v) for k, v in fields.items()}
    assert (fields["also"], fields["exclude"]) == ("0 17 * * *", "Sat,Sun; *-12-25")
    saved = c.post("/edit/weekdays", data=form(csrf, do="save", **{**fields, "also": "0 17 * * *; 0 12 * * *"}))
    assert saved.status_code == 303, saved.text
    with tickwork.connect(fresh) as admin:
        spec = admin.get("weekdays").spec
    assert (spec.also, spec.exclude) == (("0 17 * * *", "0 12 * * *"), ("Sat,Sun", "*-12-25"))
