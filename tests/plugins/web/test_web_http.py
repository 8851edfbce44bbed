"""Every dashboard route over HTTP (Starlette's TestClient: the real ASGI app, a real SQLite store
whose history a real node wrote): pages, fragments, filters, pagination, the JSON API, bad input,
and who may act (bearer token, login session, CSRF)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import tickwork
import tickwork_web
from tests.support.servers.configs import ConfigFor
from tests.support.webhelpers import RECORD, TOKEN, client, populate, with_declared_jobs, write_config
from tickwork.errors import ConfigError

NAMES = ["broken", "late", "nightly-report", "paused"]


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = write_config(tmp_path_factory.mktemp("web"))
    populate(path)
    return path


def by_next_fire(config: Path, names: list[str]) -> list[str]:
    """The expected order, computed here from each schedule's next fire (the disabled one last)."""
    with tickwork.connect(config) as admin:
        infos = [admin.get(n) for n in names]
    infos.sort(key=lambda i: (i.next_fire is None, i.next_fire.isoformat() if i.next_fire else "", i.name))
    return [i.name for i in infos]


@pytest.fixture(scope="module")
def order(config: Path) -> list[str]:
    return by_next_fire(config, NAMES)


@pytest.fixture
def reader(config: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.delenv("TICKWORK_WEB_TOKEN", raising=False)
    with client(config, None) as c:
        yield c


def names_in(html: str) -> list[str]:
    return re.findall(r'data-schedule="([^"]+)"', html)


def login(c: TestClient, name: str = "alice") -> str:
    """Log in through the form; returns the CSRF token the pages then carry."""
    response = c.post("/login", data={"token": TOKEN, "name": name})
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    page = c.get("/schedules/broken").text
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, page
    return found.group(1)


# -- pages ----------------------------------------------------------------------------------------


def test_schedules_page_lists_every_schedule_by_next_fire(reader: TestClient, order: list[str]) -> None:
    response = reader.get("/")
    assert response.status_code == 200
    html = response.text
    assert names_in(html) == order
    assert "every day at 02:00" in html and "Europe/Oslo" in html  # trigger in words, and its zone
    assert "<code>0 2 * * *</code>" in html  # and as written
    assert 'class="status s-failed"' in html and 'class="status s-disabled"' in html
    assert re.search(r"in \d+ (min|h)", html)  # relative next fire
    assert "read-only" in html and "Log in" not in html  # no token configured: no actions
    assert 'src="/static/tickwork.js"' in html


def test_the_fragment_is_only_the_live_table(reader: TestClient) -> None:
    html = reader.get("/?fragment=1&q=broken").text
    assert "<html" not in html and "<table" in html
    assert names_in(html) == ["broken"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=NIGHT", ["nightly-report"]),
        ("q=jobs_for_tests:boom", ["broken"]),  # the target matches too
        ("show=failing", ["broken"]),
        ("show=disabled", ["paused"]),
        ("show=enabled", ["broken", "late", "nightly-report"]),
        ("state=running", []),
        ("state=idle&show=enabled&q=e", ["broken", "late", "nightly-report"]),
    ],
)
def test_schedules_page_filters(reader: TestClient, config: Path, query: str, expected: list[str]) -> None:
    html = reader.get("/?" + query).text
    assert names_in(html) == by_next_fire(config, expected)
    if not expected:
        assert "match these filters" in html


def test_schedules_page_paginates_on_the_server(reader: TestClient, order: list[str]) -> None:
    first = reader.get("/?per_page=25").text
    assert "4 schedules, page 1 of 1" in first
    # per_page is one of the listed sizes in the form, but any size up to 200 is accepted
    assert names_in(reader.get("/?per_page=3").text) == order[:3]
    second = reader.get("/?per_page=3&page=2").text
    assert names_in(second) == ["paused"]
    assert "page 2 of 2" in second and 'rel="prev"' in second and "per_page=3" in second
    assert names_in(reader.get("/?per_page=3&page=9").text) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("page=0", "page: must be from 1"),
        ("page=two", "page: expected a whole number"),
        ("per_page=5000", "per_page: must be from 1 to 200"),
        ("show=broken", "show: &#39;broken&#39; is not one of all, enabled, disabled, failing"),
        ("state=sleeping", "state: &#39;sleeping&#39; is not one of idle, running"),
    ],
)
def test_schedules_page_rejects_a_malformed_query(reader: TestClient, query: str, message: str) -> None:
    response = reader.get("/?" + query)
    assert response.status_code == 400
    assert message in response.text


def test_schedule_page_shows_definition_next_fires_error_and_history(reader: TestClient, config: Path) -> None:
    response = reader.get("/schedules/broken")
    assert response.status_code == 200
    html = response.text
    with tickwork.connect(config) as admin:
        fires = admin.next_fires("broken", 10)
    assert len(fires) == 10
    listed = re.findall(r'<ol class="fires" id="next-fires">(.*?)</ol>', html, re.S)[0]
    assert re.findall(r'datetime="([^"]+)"', listed) == [t.isoformat() for t in fires]
    error_box = re.findall(r'<section class="error-box" id="last-error">(.*?)</section>', html, re.S)[0]
    assert "Traceback (most recent call last)" in error_box and "ValueError: the job failed on purpose" in error_box
    assert 'data-status="failed"' in html
    assert re.search(r'<td data-label="Duration">\d+\.\d\d s</td>', html)  # the run's duration
    assert "tests.support.jobs_for_tests:boom" in html and "every day at 03:00" in html


def test_schedule_page_history_status_filter(reader: TestClient) -> None:
    assert 'data-status="failed"' in reader.get("/schedules/broken?status=failed").text
    html = reader.get("/schedules/broken?status=succeeded").text
    assert 'data-status="' not in html and "No runs with this status" in html
    assert reader.get("/schedules/broken?status=exploded").status_code == 400


def test_schedule_page_lists_skipped_fire_times_with_their_reason(reader: TestClient) -> None:
    html = reader.get("/schedules/late").text
    skipped = re.findall(r'<section id="skipped">(.*?)</section>', html, re.S)[0]
    assert re.search(r"missed by \d+\.\ds \(misfire policy skip, grace 0.001s\)", skipped)
    assert 'id="last-error"' not in html  # a skip is not an error


def test_a_disabled_schedule_shows_what_it_would_fire(reader: TestClient) -> None:
    html = reader.get("/schedules/paused").text
    assert "(once enabled)" in html and html.count("<li><time") == 10


def test_unknown_schedule_and_page_are_404(reader: TestClient) -> None:
    response = reader.get("/schedules/nope")
    assert response.status_code == 404 and "no schedule named &#39;nope&#39;" in response.text
    assert reader.get("/no-such-page").status_code == 404


def test_runs_page_filters(reader: TestClient) -> None:
    html = reader.get("/runs").text
    assert 'data-status="failed"' in html and 'data-status="skipped"' in html
    failed = reader.get("/runs?status=failed").text
    assert 'data-status="skipped"' not in failed and 'href="/schedules/broken"' in failed
    assert 'data-status="' not in reader.get("/runs?node=elsewhere").text
    assert 'data-status="' not in reader.get("/runs?since=2999-01-01T00:00Z").text
    assert 'data-status="failed"' in reader.get("/runs?schedule=broken&until=2999-01-01").text
    assert reader.get("/runs?since=yesterday").status_code == 400
    assert reader.get("/runs?since=2026-02-01&until=2026-01-01").status_code == 400
    assert reader.get("/runs?schedule=nope").status_code == 404


def test_nodes_page_lists_node_records(reader: TestClient) -> None:
    # populate()'s node left cleanly: no node record, an empty page that says why.
    html = reader.get("/nodes").text
    assert "No nodes" in html and "older than 4 s" in html


def test_static_files_are_served(reader: TestClient) -> None:
    assert "data-refresh" in reader.get("/static/tickwork.js").text
    assert ".s-failed" in reader.get("/static/tickwork.css").text


def test_a_missing_database_is_a_clear_503(tmp_path: Path) -> None:
    config = write_config(tmp_path)  # no node has created web.db yet
    with client(config, None) as c:
        page = c.get("/")
        api = c.get("/api/schedules")
    assert page.status_code == 503 and "does not exist" in page.text
    assert api.status_code == 503 and "does not exist" in api.json()["error"]
    assert not (tmp_path / "web.db").exists()


# -- JSON API -------------------------------------------------------------------------------------


def test_api_schedules(reader: TestClient, order: list[str]) -> None:
    body = reader.get("/api/schedules").json()
    assert body["total"] == 4 and [s["name"] for s in body["schedules"]] == order
    broken = next(s for s in body["schedules"] if s["name"] == "broken")
    assert broken["last_status"] == "failed" and broken["description"] == "every day at 03:00"
    assert broken["next_fire"].endswith("Z")
    page = reader.get("/api/schedules?limit=2&offset=1&enabled=true").json()
    assert page["total"] == 3 and [s["name"] for s in page["schedules"]] == order[1:3]
    assert [s["name"] for s in reader.get("/api/schedules?failing=true").json()["schedules"]] == ["broken"]
    assert len(reader.get("/api/schedules?failing=false").json()["schedules"]) == 3


def test_api_schedule(reader: TestClient) -> None:
    body = reader.get("/api/schedules/broken").json()
    assert len(body["next_fires"]) == 10 and body["next_fires"][0] == body["next_fire"]
    assert "ValueError: the job failed on purpose" in body["last_error"]["error"]
    assert body["history"][0]["status"] == "failed" and body["history"][0]["duration_seconds"] >= 0
    skipped = reader.get("/api/schedules/late").json()["skipped"]
    assert len(skipped) == 1 and skipped[0]["error"].startswith("missed by")


def test_api_runs_and_nodes(reader: TestClient) -> None:
    runs = reader.get("/api/runs?status=failed,skipped&limit=5").json()["runs"]
    assert sorted(r["schedule"] for r in runs) == ["broken", "late"]
    assert [r["schedule"] for r in reader.get("/api/runs?schedule=late").json()["runs"]] == ["late"]
    assert reader.get("/api/runs?limit=1").json()["runs"].__len__() == 1
    assert reader.get("/api/nodes").json() == {"node_ttl": 4.0, "nodes": []}


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("/api/schedules/nope", 404, "no schedule named 'nope'"),
        ("/api/runs?schedule=nope", 404, "no schedule named 'nope'"),
        ("/api/runs?limit=x", 400, "limit: expected a whole number, got 'x'"),
        ("/api/runs?limit=0", 400, "limit: must be from 1 to 1000, got 0"),
        ("/api/runs?status=ok", 400, "status: 'ok' is not one of running, succeeded"),
        ("/api/runs?since=soon", 400, "since: expected an ISO-8601 time"),
        ("/api/schedules?enabled=maybe", 400, "enabled: expected true or false, got 'maybe'"),
        ("/api/schedules?offset=-1", 400, "offset: must be from 0"),
        ("/api/schedules?state=busy", 400, "state: 'busy' is not one of idle, running"),
        ("/api/nothing", 404, "no API endpoint /api/nothing"),
    ],
)
def test_api_bad_input(reader: TestClient, url: str, status: int, message: str) -> None:
    response = reader.get(url)
    assert response.status_code == status
    assert message in response.json()["error"]


# -- who may act ----------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["trigger", "enable", "disable"])
def test_api_actions_need_the_token(fresh: Path, action: str) -> None:
    with client(fresh, TOKEN) as c:
        missing = c.post(f"/api/schedules/broken/{action}")
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        wrong = c.post(f"/api/schedules/broken/{action}", headers={"Authorization": "Bearer guess"})
        assert wrong.status_code == 403
        assert c.delete("/api/schedules/broken").status_code == 401
    with client(fresh, None) as c:  # no token configured: read-only
        refused = c.post(f"/api/schedules/broken/{action}", headers={"Authorization": f"Bearer {TOKEN}"})
        assert refused.status_code == 403 and "read-only" in refused.json()["error"]


def test_api_actions_with_the_token(fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}", "X-Tickwork-User": "deploy-bot"}
    caplog.set_level(logging.INFO, logger="tickwork.web.actions")
    with client(fresh, TOKEN) as c:
        disabled = c.post("/api/schedules/nightly-report/disable", headers=auth).json()
        assert disabled["schedule"]["enabled"] is False and disabled["schedule"]["next_fire"] is None
        conflict = c.post("/api/schedules/nightly-report/trigger", headers=auth)
        assert conflict.status_code == 409 and "disabled" in conflict.json()["error"]
        assert c.post("/api/schedules/nightly-report/enable", headers=auth).json()["schedule"]["enabled"]
        triggered = c.post("/api/schedules/nightly-report/trigger", headers=auth).json()["schedule"]
        assert triggered["next_fire"] <= c.get("/api/schedules").json()["schedules"][0]["next_fire"]
        assert c.post("/api/schedules/nope/trigger", headers=auth).status_code == 404
        assert c.post("/api/schedules/broken/explode", headers=auth).status_code == 404
        assert c.delete("/api/schedules/paused", headers=auth).json()["schedule"]["name"] == "paused"
        assert c.get("/api/schedules/paused").status_code == 404
    logged = [r.getMessage() for r in caplog.records if r.name == "tickwork.web.actions"]
    assert any(
        re.fullmatch(r"action trigger on schedule 'nightly-report' by deploy-bot \(API token\) from \S+ at \S+Z: ok", m)
        for m in logged
    ), logged
    assert any("refused: schedule 'nightly-report' is disabled" in m for m in logged)


def test_api_creates_and_changes_schedules_with_the_token(fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}", "X-Tickwork-User": "deploy-bot"}
    caplog.set_level(logging.INFO, logger="tickwork.web.actions")
    body = {
        "name": "api-export",
        "expression": "0 9 * * mon-fri",
        "target": "tests.support.jobs_for_tests:with_args",
        "tz": "Europe/Berlin",
        "jitter": "30s",
        "args": {"city": "Oslo"},
        "overlap": "buffer_one",
    }
    with client(fresh, TOKEN) as c:
        assert c.post("/api/schedules", json=body).status_code == 401
        assert c.post("/api/schedules", json=body, headers={"Authorization": "Bearer guess"}).status_code == 403
        created = c.post("/api/schedules", json=body, headers=auth)
        assert created.status_code == 201, created.text
        schedule = created.json()["schedule"]
        assert schedule["name"] == "api-export" and schedule["timezone"] == "Europe/Berlin"
        assert schedule["arguments"] == {"city": "Oslo"} and schedule["jitter"] == 30
        assert schedule["overlap"] == "buffer_one"
        assert c.get("/api/schedules/api-export").json()["expression"] == "0 9 * * mon-fri"
        again = c.post("/api/schedules", json=body, headers=auth)
        assert again.status_code == 409 and "api-export" in again.json()["error"]

        changed = c.patch("/api/schedules/api-export", json={"expression": "30 6 * * *", "retries": 2}, headers=auth)
        assert changed.status_code == 200, changed.text
        after = changed.json()["schedule"]
        assert after["expression"] == "30 6 * * *" and after["retries"] == 2
        assert after["jitter"] == 30 and after["arguments"] == {"city": "Oslo"}  # the rest is kept
        assert after["next_fire"] != schedule["next_fire"]
        assert c.patch("/api/schedules/nope", json={"retries": 1}, headers=auth).status_code == 404
        renamed = c.patch("/api/schedules/api-export", json={"name": "other"}, headers=auth)
        assert renamed.status_code == 400 and "renamed" in renamed.json()["error"]
    logged = [r.getMessage() for r in caplog.records if r.name == "tickwork.web.actions"]
    for action in ("create", "edit"):
        ok = rf"action {action} on schedule 'api-export' by deploy-bot \(API token\) .*: ok"
        assert any(re.fullmatch(ok, m) for m in logged), logged


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"name": "x", "expression": "0 2 31 2 *", "target": RECORD}, 400, "never fires"),
        ({"name": "x", "expression": "0 25 * * *", "target": RECORD}, 400, "hour"),
        ({"name": "x", "expression": "* * * * *", "target": "nomodule:f"}, 400, "cannot resolve target"),
        ({"name": "x", "expression": "* * * * *", "target": RECORD, "bogus": 1}, 400, "unknown option 'bogus'"),
        ({"name": "x", "expression": "* * * * *", "target": RECORD, "jitter": "soon"}, 400, "jitter"),
        ({"name": "x", "expression": "* * * * *", "target": RECORD, "tz": "Europe/Berlln"}, 400, "Europe/Berlin"),
        ({"name": "x\ny", "expression": "* * * * *", "target": RECORD}, 400, "name"),
        ({"name": "x", "expression": "* * * * *"}, 400, "target: required"),
        ({"name": "x", "expression": "* * * * *", "target": RECORD, "replace": True}, 400, "not a schedule field"),
        (["x"], 400, "must be a JSON object"),
        ("not json", 400, "not JSON"),
        ({"name": "x", "expression": "* * * * *", "target": RECORD, "args": {"pad": "x" * 70_000}}, 413, "KiB"),
    ],
)
def test_api_create_refuses_a_bad_schedule_and_says_why(
    fresh: Path, caplog: pytest.LogCaptureFixture, body: object, status: int, message: str
) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    caplog.set_level(logging.INFO, logger="tickwork.web.actions")
    with client(fresh, TOKEN) as c:
        if isinstance(body, str):
            answer = c.post("/api/schedules", content=body, headers=auth)
        else:
            answer = c.post("/api/schedules", json=body, headers=auth)
        assert answer.status_code == status, answer.text
        assert message in answer.json()["error"]
        assert c.get("/api/schedules/x").status_code == 404
    if status == 400 and isinstance(body, dict) and "target" in body and "replace" not in body:
        # A definition refused by the admin API is audited as a refused create.
        logged = [r.getMessage() for r in caplog.records]
        assert any("action create on schedule" in m and "refused" in m for m in logged), logged


def test_api_does_not_change_a_schedule_declared_in_code(tmp_path: Path) -> None:
    config = with_declared_jobs(tmp_path)
    with client(config, TOKEN) as c:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        refused = c.patch("/api/schedules/hourly-report", json={"retries": 5}, headers=auth)
        assert (
            refused.status_code == 409 and "declared in code (tests.support.declared_jobs)" in refused.json()["error"]
        )
        assert c.get("/api/schedules/hourly-report").json()["retries"] != 5


def test_browser_login_session_and_csrf(fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tickwork.web.actions")
    with client(fresh, TOKEN) as c:
        assert 'href="/login"' in c.get("/").text
        assert 'data-action="trigger"' not in c.get("/schedules/broken").text  # not logged in: no forms
        assert c.post("/schedules/broken/trigger", data={"csrf": "x"}).status_code == 401
        bad = c.post("/login", data={"token": "guess"})
        assert bad.status_code == 403 and "not valid" in bad.text
        csrf = login(c)
        page = c.get("/schedules/broken").text
        assert 'data-action="trigger"' in page and "alice (session" in page
        assert c.post("/schedules/broken/trigger", data={}).status_code == 403  # no CSRF token
        assert c.post("/schedules/broken/trigger", data={"csrf": "0" * 64}).status_code == 403
        done = c.post("/schedules/broken/trigger", data={"csrf": csrf})
        assert done.status_code == 303 and done.headers["location"] == "/schedules/broken?done=trigger"
        assert "Run requested" in c.get(done.headers["location"]).text
        assert c.post("/schedules/paused/trigger", data={"csrf": csrf}).status_code == 409
        assert c.post("/schedules/paused/remove", data={"csrf": csrf}).headers["location"] == "/?done=remove"
        assert c.get("/schedules/paused").status_code == 404
        assert c.post("/logout").status_code == 303
        c.cookies.clear()
        assert c.post("/schedules/broken/disable", data={"csrf": csrf}).status_code == 401
    assert any("by alice (session " in r.getMessage() for r in caplog.records)
    # A session cookie is worth nothing under another token.
    with client(fresh, "another-token") as c:
        assert c.post("/schedules/broken/disable", data={"csrf": csrf}).status_code == 401


def test_login_without_a_token_configured(reader: TestClient) -> None:
    assert "read-only" in reader.get("/login").text
    assert reader.post("/login", data={"token": TOKEN}).status_code == 403


def test_token_from_the_environment_or_token_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path, extra='[web]\ntoken_env = "MY_DASHBOARD_TOKEN"\n')
    populate(config)
    monkeypatch.setenv("TICKWORK_WEB_TOKEN", "not-this-one")
    with pytest.raises(ConfigError, match=r"web.token_env: the environment variable MY_DASHBOARD_TOKEN is not set"):
        tickwork_web.app(config)
    monkeypatch.setenv("MY_DASHBOARD_TOKEN", "from-token-env")
    with TestClient(tickwork_web.app(config)) as c:
        auth = {"Authorization": "Bearer from-token-env"}
        assert c.post("/api/schedules/broken/disable", headers=auth).status_code == 200
    (tmp_path / "plain").mkdir()
    plain = write_config(tmp_path / "plain")
    populate(plain)
    with TestClient(tickwork_web.app(plain)) as c:  # $TICKWORK_WEB_TOKEN
        assert c.post("/api/schedules/broken/disable", headers={"Authorization": "Bearer not-this-one"}).is_success


def test_mounted_inside_another_asgi_app(config: Path) -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    async def home(request: object) -> PlainTextResponse:
        return PlainTextResponse("host app")

    host = Starlette(routes=[Route("/", home), Mount("/ops/tickwork", app=tickwork_web.app(config, token=TOKEN))])
    with TestClient(host, follow_redirects=False) as c:
        assert c.get("/").text == "host app"
        html = c.get("/ops/tickwork/").text
        assert 'href="/ops/tickwork/schedules/broken"' in html and 'src="/ops/tickwork/static/tickwork.js"' in html
        assert c.get("/ops/tickwork/static/tickwork.css").status_code == 200
        assert c.get("/ops/tickwork/api/schedules").json()["total"] == 4
        response = c.post("/ops/tickwork/login", data={"token": TOKEN})
        assert response.headers["location"] == "/ops/tickwork/?done=login"
        assert "Path=/ops/tickwork" in response.headers["set-cookie"]


def test_run_time_schedule_added_after_start_appears(fresh: Path) -> None:
    with client(fresh, None) as c:
        before = names_in(c.get("/").text)
        with tickwork.connect(fresh) as admin:
            admin.add("added-later", "* * * * *", RECORD)
        assert names_in(c.get("/").text) == ["added-later", *before]


def test_the_dashboard_on_postgresql(tmp_path: Path, config_for: ConfigFor) -> None:
    store = config_for("postgres", migrated=True).toml()
    config = tmp_path / "tickwork.toml"
    config.write_text(f'[scheduler]\nnode_id = "pg-web-node"\n\n{store}\n[executor.local]\n', encoding="utf-8")
    populate(config)
    with client(config, TOKEN) as c:
        body = c.get("/api/schedules").json()
        assert body["total"] == 4 and [s["name"] for s in body["schedules"]] == by_next_fire(config, NAMES)
        assert [s["name"] for s in c.get("/api/schedules?failing=true").json()["schedules"]] == ["broken"]
        assert "ValueError: the job failed on purpose" in c.get("/schedules/broken").text
        assert names_in(c.get("/?show=failing").text) == ["broken"]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert c.post("/api/schedules/late/disable", headers=auth).json()["schedule"]["enabled"] is False
