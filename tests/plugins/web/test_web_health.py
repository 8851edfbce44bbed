"""Schedule health on the dashboard and in ``/api/schedules``: the column, the filter and the
reason on a schedule's page (a real SQLite store whose history a real node wrote)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import tickwork
import tickwork_web
from tests.support.webhelpers import populate, write_config


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = write_config(tmp_path_factory.mktemp("web-health"))
    populate(path)
    return path


@pytest.fixture
def reader(config: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.delenv("TICKWORK_WEB_TOKEN", raising=False)
    with TestClient(tickwork_web.app(config), follow_redirects=False) as c:
        yield c


def health_column(html: str) -> dict[str, str]:
    """Schedule name -> the health shown in its row."""
    rows = re.findall(r'<tr class="[^"]*" data-schedule="([^"]+)">(.*?)</tr>', html, re.S)
    return {name: re.findall(r'class="status h-(\w+)"', row)[0] for name, row in rows}


def expected(config: Path) -> dict[str, str]:
    with tickwork.connect(config) as admin:
        return {i.name: i.health.state.value for i in admin.list() if i.health is not None}


def test_the_schedules_page_has_a_health_column(reader: TestClient, config: Path) -> None:
    shown = health_column(reader.get("/").text)
    assert shown == expected(config)
    assert shown["broken"] == "failing"
    assert shown["paused"] == "paused"


@pytest.mark.parametrize("state", ["failing", "paused", "healthy", "overdue"])
def test_the_health_filter(reader: TestClient, config: Path, state: str) -> None:
    html = reader.get(f"/?health={state}").text
    wanted = sorted(name for name, h in expected(config).items() if h == state)
    assert sorted(health_column(html)) == wanted
    assert f'<option value="{state}" selected>' in html
    api = reader.get(f"/api/schedules?health={state}").json()
    assert sorted(s["name"] for s in api["schedules"]) == wanted
    assert api["total"] == len(wanted)
    assert all(s["health"]["state"] == state for s in api["schedules"])


def test_a_bad_health_value_is_refused(reader: TestClient) -> None:
    assert reader.get("/?health=sick").status_code == 400
    response = reader.get("/api/schedules?health=sick")
    assert response.status_code == 400
    assert "health" in response.text


def test_the_schedule_page_gives_the_reason(reader: TestClient) -> None:
    html = reader.get("/schedules/broken").text
    assert '<span class="status h-failing">failing</span>' in html
    reason = re.search(r'<span class="health-reason">(.*?)</span>', html)
    assert reason is not None
    assert reason.group(1).startswith("1 failure, never succeeded; last: failed: ValueError")
    detail = reader.get("/api/schedules/broken").json()
    assert detail["health"]["state"] == "failing"
    assert detail["health"]["consecutive_failures"] == 1
