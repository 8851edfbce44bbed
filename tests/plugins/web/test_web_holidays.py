"""The dashboard with a holiday calendar (docs/holidays.md) over HTTP (Starlette's TestClient on a
real SQLite store): the schedule page's next 10 fire times say why a fire moved, its JSON has
``next_fires_moved`` beside ``next_fires``, and both are what ``Admin.next_fires_explained``
says. ``start_at`` pins the fires to 2030, whatever today is."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import tickwork
from tests.support.webhelpers import RECORD, client, write_config

pytest.importorskip("holidays")

#: 09:00 Berlin on the 1st from May 2030, with on_holiday = "next": Labour Day (Wednesday 1 May)
#: moves to Thursday 2 May, Saturday 1 June to Monday 3 June; 1 July (Monday) and 1 August
#: (Thursday) stay.
EXPECTED = [
    (datetime(2030, 5, 2, 7, tzinfo=UTC), "moved from 2030-05-01T09:00:00+02:00: 2030-05-01 is Labor Day (DE-BE)"),
    (datetime(2030, 6, 3, 7, tzinfo=UTC), "moved from 2030-06-01T09:00:00+02:00: 2030-06-01 is "),
    (datetime(2030, 7, 1, 7, tzinfo=UTC), ""),
    (datetime(2030, 8, 1, 7, tzinfo=UTC), ""),
]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = write_config(tmp_path)
    with tickwork.connect(path) as admin:
        admin.add(
            "payroll",
            "0 9 1 * *",
            RECORD,
            tz="Europe/Berlin",
            holidays="DE-BE",
            on_holiday="next",
            start_at=datetime(2030, 4, 15, tzinfo=UTC),
        )
    return path


@pytest.fixture
def reader(config: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.delenv("TICKWORK_WEB_TOKEN", raising=False)
    with client(config, None) as c:
        yield c


def agrees(got: list[tuple[datetime, str]]) -> None:
    """``got`` starts with :data:`EXPECTED` (a weekend's reason is checked up to the day's name)."""
    assert [t for t, _ in got[: len(EXPECTED)]] == [t for t, _ in EXPECTED]
    for (_, why), (_, expected) in zip(got, EXPECTED, strict=False):
        assert why.startswith(expected) and (why == expected or expected.endswith("is ")), (why, expected)


def test_admin_explains_each_next_fire(config: Path) -> None:
    with tickwork.connect(config) as admin:
        explained = admin.next_fires_explained("payroll", 10)
        plain = admin.next_fires("payroll", 10)
    assert len(explained) == 10
    agrees(explained)
    assert plain == [t for t, _ in explained]


def test_schedule_json_has_next_fires_moved_beside_next_fires(reader: TestClient) -> None:
    body = reader.get("/api/schedules/payroll").json()
    assert len(body["next_fires"]) == len(body["next_fires_moved"]) == 10
    assert body["holidays"] == "DE-BE" and body["on_holiday"] == "next"
    fires = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in body["next_fires"]]
    agrees(list(zip(fires, body["next_fires_moved"], strict=True)))


def test_schedule_page_says_why_a_fire_moved(reader: TestClient) -> None:
    response = reader.get("/schedules/payroll")
    assert response.status_code == 200
    listed = re.findall(r'<ol class="fires" id="next-fires">(.*?)</ol>', response.text, re.S)[0]
    items = re.findall(r"<li>(.*?)</li>", listed, re.S)
    assert len(items) == 10
    shown = []
    for item in items:
        (moment,) = re.findall(r'datetime="([^"]+)"', item)
        notes = re.findall(r'<span class="muted moved">(.*?)</span>', item, re.S)
        shown.append((datetime.fromisoformat(moment), notes[0] if notes else ""))
    agrees(shown)
