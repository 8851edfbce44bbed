"""The engine honours a schedule's own misfire grace, max_catchup and jitter (a real SQLite store
on a fake clock, the engine stepped by hand; tests/engine/test_engine.py's helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import add, make_engine, step
from tests.support.stores import T0
from tickwork.engine.loop import Engine
from tickwork.scheduling.firetimes import jitter_offset
from tickwork.sql.store import SQLStore
from tickwork.structures import MisfirePolicy
from tickwork.testing import FakeClock


@pytest.fixture
def engine(sqlite_store: SQLStore, clock: FakeClock) -> Iterator[Engine]:
    jobs.calls.clear()
    eng, executor = make_engine(sqlite_store, clock)
    yield eng
    executor.shutdown(wait=False)
    eng.membership.stop()


def history(store: SQLStore) -> list[tuple[int, str]]:
    """(seconds after T0, status) of every run, in fire-time order."""
    rows = sorted(store.history(limit=1000), key=lambda r: (r.scheduled_for, r.id))
    return [(int((r.scheduled_for - T0).total_seconds()), r.status.value) for r in rows]


def test_a_schedules_own_grace_and_max_catchup_cap_what_all_replays(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    # Every 10 s, policy all; the node's grace is 30 s, the schedule's 10 minutes: everything
    # missed is within it, and max_catchup 2 replays only the latest two after the first.
    add(
        sqlite_store,
        "record",
        "*/10 * * * * *",
        misfire=MisfirePolicy.ALL,
        misfire_grace=timedelta(minutes=10),
        max_catchup=2,
    )
    clock.set(T0 + timedelta(seconds=65))
    for _ in range(5):
        step(engine)
    assert history(sqlite_store) == [
        (10, "succeeded"),  # 55 s late: within its own grace (the node's would skip it)
        (20, "skipped"),
        (30, "skipped"),
        (40, "skipped"),
        (50, "succeeded"),
        (60, "succeeded"),
    ]
    assert jobs.calls == ["record"] * 3


def test_a_jittered_schedule_fires_at_its_offset(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "record", jitter=timedelta(seconds=30))
    offset = jitter_offset("record", timedelta(seconds=30))
    first = T0 + offset  # the fire of 00:00, moved: after the store was written at T0
    assert sqlite_store.get("record").next_fire == first
    clock.set(first - timedelta(milliseconds=1))
    step(engine)
    assert jobs.calls == []  # not before its moved time (claimed ahead at most, and held)
    clock.set(first)
    step(engine)
    assert jobs.calls == ["record"]
    assert [(r.scheduled_for, r.status.value) for r in sqlite_store.history()] == [(first, "succeeded")]
    assert sqlite_store.get("record").next_fire == first + timedelta(minutes=1)
