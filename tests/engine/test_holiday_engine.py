"""Holiday calendars on the engine over real SQL stores (SQLite, PostgreSQL) on a fake clock
(docs/holidays.md): a dropped fire is a skipped history row with its reason, written only once
its time has come by the database clock; a moved fire runs at the moved time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import add, runs, step
from tests.support.engines import new_engine as new_engine  # the fixture
from tests.support.stores import make_store
from tickwork.engine import Engine
from tickwork.scheduling.sync import update
from tickwork.sql.store import SQLStore
from tickwork.structures import RunStatus
from tickwork.testing import FakeClock

pytest.importorskip("holidays")

#: Berlin 09:00 (CEST, UTC+2) of the days the tests use.
APRIL_1 = datetime(2026, 4, 1, 7, tzinfo=UTC)
LABOUR_DAY = datetime(2026, 5, 1, 7, tzinfo=UTC)  # a Friday, a holiday in all of Germany
MAY_4 = datetime(2026, 5, 4, 7, tzinfo=UTC)
JUNE_1 = datetime(2026, 6, 1, 7, tzinfo=UTC)


@pytest.fixture(params=["sqlite", "postgres"])
def sql_store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[SQLStore]:
    kind = request.param
    store = make_store(kind, "skip-locked" if kind == "postgres" else "mark", request, tmp_path, clock=clock)
    assert isinstance(store, SQLStore)
    yield store
    store.close()


@pytest.fixture(autouse=True)
def _reset_jobs() -> Iterator[None]:
    jobs.calls.clear()
    yield
    jobs.gate.set()


def at(clock: FakeClock, moment: datetime) -> None:
    clock.advance((moment - clock()).total_seconds())


def monthly(store: SQLStore, clock: FakeClock, policy: str) -> None:
    """``record`` on the 1st at 09:00 Berlin, added mid-March (its first fire is 1 April)."""
    at(clock, datetime(2026, 3, 15, tzinfo=UTC))
    add(store, "record", "0 9 1 * *", timezone="Europe/Berlin", holidays="DE-BE", on_holiday=policy)
    assert store.get("record").next_fire == APRIL_1


def test_a_skipped_holiday_fire_is_recorded_once_its_time_has_come(
    sql_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sql_store)
    monthly(sql_store, clock, "skip")
    at(clock, APRIL_1)
    step(engine)
    # The end of 1 April plans past 1 May (next fire 1 June) but writes no row for it: it is future.
    assert [(r.scheduled_for, r.status) for r in runs(sql_store)] == [(APRIL_1, RunStatus.SUCCEEDED)]
    assert sql_store.get("record").next_fire == JUNE_1
    at(clock, JUNE_1)
    step(engine)
    history = runs(sql_store)
    assert [(r.scheduled_for, r.status) for r in history] == [
        (APRIL_1, RunStatus.SUCCEEDED),
        (LABOUR_DAY, RunStatus.SKIPPED),
        (JUNE_1, RunStatus.SUCCEEDED),
    ]
    skipped = history[1]
    assert skipped.error == "on_holiday skip: 2026-05-01 is Labor Day (DE-BE)"
    assert skipped.finished_at is not None and skipped.finished_at >= LABOUR_DAY
    assert jobs.calls == ["record", "record"]


def test_an_edit_after_planning_past_a_holiday_leaves_no_row_in_the_way(
    sql_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sql_store)
    monthly(sql_store, clock, "skip")
    at(clock, APRIL_1)
    step(engine)
    # Holidays taken off (jobs update --holidays ''): 1 May is a fire again, and runs.
    at(clock, datetime(2026, 4, 10, tzinfo=UTC))
    spec = sql_store.get("record").spec
    update(sql_store, replace(spec, holidays=None), recompute=True)
    assert sql_store.get("record").next_fire == LABOUR_DAY
    at(clock, LABOUR_DAY)
    step(engine)
    assert [(r.scheduled_for, r.status) for r in runs(sql_store)] == [
        (APRIL_1, RunStatus.SUCCEEDED),
        (LABOUR_DAY, RunStatus.SUCCEEDED),
    ]
    assert jobs.calls == ["record", "record"]


def test_a_moved_fire_runs_at_the_moved_time(
    sql_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sql_store)
    monthly(sql_store, clock, "next")
    at(clock, APRIL_1)
    step(engine)
    assert sql_store.get("record").next_fire == MAY_4
    at(clock, LABOUR_DAY)
    step(engine)
    assert jobs.calls == ["record"], "ran on the holiday itself"
    at(clock, MAY_4)
    step(engine)
    assert [(r.scheduled_for, r.status) for r in runs(sql_store)] == [
        (APRIL_1, RunStatus.SUCCEEDED),
        (MAY_4, RunStatus.SUCCEEDED),
    ]
    assert sql_store.get("record").next_fire == JUNE_1
