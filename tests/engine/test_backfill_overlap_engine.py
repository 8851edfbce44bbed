"""The engine runs a backfill by its overlap (a real SQLite store on a fake clock, the backfill
duty stepped by hand, the real local executor): ``buffer_all`` starts one fire at a time, oldest
first, the next only once the previous run has ended; ``allow`` starts them together."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest

from tests.support import backfill_jobs
from tests.support.engines import add, runs
from tests.support.engines import new_engine as new_engine  # the fixture
from tests.support.stores import T0
from tickwork.engine.loop import Engine
from tickwork.sql.store import SQLStore
from tickwork.structures import RunStatus


@pytest.fixture(autouse=True)
def fresh_jobs() -> Iterator[None]:
    backfill_jobs.started.clear()
    backfill_jobs.steps = threading.Semaphore(0)
    yield
    backfill_jobs.steps.release(100)  # no job thread left waiting


def yesterday(hours: int) -> list[datetime]:
    start = T0 - timedelta(days=1)
    return [start + timedelta(hours=h) for h in range(hours)]


def running(store: SQLStore) -> list[datetime]:
    return [r.scheduled_for for r in runs(store) if r.status is RunStatus.RUNNING]


def collected(engine: Engine) -> int:
    """The engine's part of a pass for ended runs (the loop is not running here): collect what
    the executor reported and write it; how many backfilled runs are still in flight."""
    engine.runs.finish_completed()
    engine.runs.write_ends(now=True)
    return engine.backfills.in_flight


def until(predicate: Callable[[], bool]) -> None:
    """Wait (a bounded while) for the executor's threads to get where the test needs them."""
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, "the executor never got there"
        time.sleep(0.01)


def test_buffer_all_runs_the_fires_one_at_a_time_oldest_first(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore
) -> None:
    engine = new_engine(sqlite_store)
    add(sqlite_store, "stepped", "0 * * * *", target="tests.support.backfill_jobs:stepped")
    times = yesterday(3)
    assert sqlite_store.queue_backfill("stepped", list(reversed(times))) == list(reversed(times))
    for count, moment in enumerate(times, start=1):
        engine.backfills.run()
        until(lambda count=count: len(backfill_jobs.started) == count)
        assert running(sqlite_store) == [moment]
        engine.backfills.run()  # while it runs, the next one waits
        assert running(sqlite_store) == [moment] and engine.backfills.in_flight == 1
        backfill_jobs.steps.release()
        until(lambda: collected(engine) == 0)
    assert backfill_jobs.started == [t.isoformat() for t in times]
    assert [(r.scheduled_for, r.status) for r in runs(sqlite_store)] == [(t, RunStatus.SUCCEEDED) for t in times]
    assert engine.backfills.run() == 0  # nothing left


def test_allow_runs_the_fires_together(new_engine: Callable[..., Engine], sqlite_store: SQLStore) -> None:
    engine = new_engine(sqlite_store)
    add(sqlite_store, "stepped", "0 * * * *", target="tests.support.backfill_jobs:stepped")
    times = yesterday(3)
    sqlite_store.queue_backfill("stepped", times, overlap="allow")
    engine.backfills.run()
    until(lambda: len(backfill_jobs.started) == 3)
    assert running(sqlite_store) == times and engine.backfills.in_flight == 3
    backfill_jobs.steps.release(3)
    until(lambda: collected(engine) == 0)
    assert {r.status for r in runs(sqlite_store)} == {RunStatus.SUCCEEDED}


def test_allow_stays_within_the_schedules_max_concurrent(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore
) -> None:
    engine = new_engine(sqlite_store)
    add(
        sqlite_store,
        "stepped",
        "0 * * * *",
        target="tests.support.backfill_jobs:stepped",
        overlap="allow",
        max_concurrent=2,
    )
    times = yesterday(3)
    sqlite_store.queue_backfill("stepped", times, overlap="allow")
    engine.backfills.run()
    until(lambda: len(backfill_jobs.started) == 2)
    engine.backfills.run()
    assert running(sqlite_store) == times[:2]
    backfill_jobs.steps.release()
    until(lambda: collected(engine) == 1)
    engine.backfills.run()
    until(lambda: len(backfill_jobs.started) == 3)
    assert len(running(sqlite_store)) == 2
    backfill_jobs.steps.release(2)
    until(lambda: collected(engine) == 0)
    assert sorted(r.scheduled_for for r in runs(sqlite_store)) == times
