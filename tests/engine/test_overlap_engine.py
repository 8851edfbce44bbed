"""The engine honours ``overlap`` (a real SQLite store on a fake clock, the engine stepped by
hand, the real local executor): buffer_one and buffer_all run the fires that came due during a
run after it, cancel_other stops the run when the next fire comes and starts that fire."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support import overlap_jobs
from tests.support.engines import add, runs, step
from tests.support.engines import new_engine as new_engine  # the fixture
from tests.support.stores import T0, Ticker
from tickwork import schedules as admin
from tickwork.engine.loop import Engine
from tickwork.sql.store import SQLStore
from tickwork.structures import RunStatus, ScheduleSpec
from tickwork.testing import FakeClock


@pytest.fixture(autouse=True)
def fresh_jobs() -> Iterator[None]:
    jobs.calls.clear()
    jobs.gate.clear()
    overlap_jobs.cancelled.clear()
    yield
    jobs.gate.set()  # no job thread left waiting


def history(store: SQLStore) -> list[tuple[int, str]]:
    """(seconds after T0, status) of every run, in fire-time order."""
    return [(int((r.scheduled_for - T0).total_seconds()), r.status.value) for r in runs(store)]


def block_for(engine: Engine, clock: FakeClock, seconds: int) -> None:
    """Start the fire of T0 + 1 s (the blocked job), let ``seconds`` pass while it runs, end it."""
    clock.set(T0 + timedelta(seconds=1))
    engine.tick()
    assert len(engine.in_flight) == 1
    clock.advance(seconds)
    engine.tick()
    assert len(engine.in_flight) == 1, "fired again while the previous run was active"
    jobs.gate.set()
    engine.drain(5)


def test_buffer_one_runs_the_latest_fire_after_the_run_and_skips_the_rest(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore, clock: FakeClock
) -> None:
    engine = new_engine(sqlite_store)
    add(sqlite_store, "blocked", "* * * * * *", overlap="buffer_one")
    block_for(engine, clock, 5)  # fires of 2..6 came due while it ran
    assert sqlite_store.get("blocked").next_fire == T0 + timedelta(seconds=6)
    step(engine)
    assert history(sqlite_store) == [
        (1, "succeeded"),
        (2, "skipped"),
        (3, "skipped"),
        (4, "skipped"),
        (5, "skipped"),
        (6, "succeeded"),  # the waiting fire, as a normal run of its own fire time
    ]
    reasons = [r.error or "" for r in runs(sqlite_store) if r.status is RunStatus.SKIPPED]
    assert all("overlap buffer_one: only the latest due fire, 2026-01-01T00:00:06Z, waits" in r for r in reasons)
    assert jobs.calls == ["blocked", "blocked"]
    assert sqlite_store.get("blocked").next_fire == T0 + timedelta(seconds=7)


def test_a_waiting_fire_runs_even_when_older_than_the_misfire_grace(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore, clock: FakeClock
) -> None:
    # Every 10 s with a grace of 2 s: the fire of 11 s waited 5 s for the run of 1 s. It is late
    # from the end it waited for, not from its own time.
    engine = new_engine(sqlite_store)
    add(sqlite_store, "blocked", "1/10 * * * * *", overlap="buffer_one", misfire_grace=timedelta(seconds=2))
    block_for(engine, clock, 15)  # the run ends at 16 s; 11 s came due meanwhile
    step(engine)
    assert history(sqlite_store) == [(1, "succeeded"), (11, "succeeded")]


def test_buffer_all_runs_every_waiting_fire_in_order_then_goes_on(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore, clock: FakeClock
) -> None:
    engine = new_engine(sqlite_store)
    add(sqlite_store, "blocked", "* * * * * *", overlap="buffer_all", max_catchup=3)
    block_for(engine, clock, 5)  # 2..6 came due: the latest 3 wait (max_catchup), 2 and 3 skipped
    for _ in range(4):
        step(engine)
    assert history(sqlite_store) == [
        (1, "succeeded"),
        (2, "skipped"),
        (3, "skipped"),
        (4, "succeeded"),
        (5, "succeeded"),
        (6, "succeeded"),
    ]
    started = [r.started_at for r in runs(sqlite_store) if r.status is RunStatus.SUCCEEDED]
    assert started == sorted(started)
    assert all("beyond max_catchup 3 (overlap buffer_all)" in (r.error or "") for r in runs(sqlite_store)[1:3])
    assert sqlite_store.get("blocked").next_fire == T0 + timedelta(seconds=7)


def test_cancel_other_stops_an_asyncio_run_and_starts_the_new_fire(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore, clock: FakeClock
) -> None:
    ticker = Ticker()
    engine = new_engine(sqlite_store, monotonic=ticker)
    spec = ScheduleSpec(
        "forever",
        "cron",
        "*/10 * * * * *",
        "tests.support.overlap_jobs:busy_async",
        arguments={"seconds": 3600},
        overlap="cancel_other",
    )
    admin.add(sqlite_store, spec)
    clock.set(T0 + timedelta(seconds=10))
    engine.tick()
    assert len(engine.in_flight) == 1
    clock.advance(9.9)
    ticker.advance(9.9)
    engine.tick()
    assert history(sqlite_store) == [(10, "running")]  # not before the next fire's time
    clock.advance(0.1)
    ticker.advance(0.1)
    # Its next fire came: in one pass the run is stopped, its end written, the schedule released
    # and the new fire claimed (fenced as any claim) and started.
    engine.tick()
    assert history(sqlite_store) == [(10, "cancelled"), (20, "running")]
    old = runs(sqlite_store)[0]
    assert old.error == "cancelled: the next fire (2026-01-01T00:00:20Z) came due while it ran (overlap cancel_other)"
    # The coroutine itself was cancelled (on the executor's loop thread, just after the report).
    for _ in range(250):
        if overlap_jobs.cancelled:
            break
        time.sleep(0.02)
    assert overlap_jobs.cancelled == ["2026-01-01T00:00:10+00:00"]
    (new_run,) = engine.in_flight
    # Stopped at once here too, so that no task is left on the loop when the executor stops.
    assert engine.executors["local"].cancel(new_run, "end of the test")
    engine.drain(5)


def test_cancel_other_in_thread_mode_lets_the_new_fire_wait_for_the_run(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore, clock: FakeClock
) -> None:
    ticker = Ticker()
    engine = new_engine(sqlite_store, monotonic=ticker)
    add(sqlite_store, "blocked", "* * * * * *", overlap="cancel_other")
    clock.set(T0 + timedelta(seconds=1))
    engine.tick()
    clock.advance(3)
    ticker.advance(3)
    engine.tick()  # asked to stop: a thread cannot be; it keeps its claim
    assert len(engine.in_flight) == 1
    jobs.gate.set()
    engine.drain(5)
    step(engine)
    assert history(sqlite_store) == [(1, "succeeded"), (2, "skipped"), (3, "skipped"), (4, "succeeded")]
    first, passed = runs(sqlite_store)[:2]
    # What happened is recorded: on the run that could not be stopped, and on the passed fires.
    assert first.error == (
        "not stopped when the next fire (2026-01-01T00:00:02Z) came due: the executor cannot stop this run "
        "(a thread); that fire waited for its end (overlap cancel_other)"
    )
    assert passed.error == (
        "due while the previous run was still active (overlap cancel_other: only the latest due fire, "
        "2026-01-01T00:00:04Z, runs after it: the run could not be stopped)"
    )
