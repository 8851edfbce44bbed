"""A node whose retry's schedule row another database session holds locked goes on firing the
rest: the retry's start is passed over, not waited for, and lands once the lock is gone
(docs/claim-protocol.md, "Locks held by other sessions"). Waiting there failed the whole pass
after ``lock_timeout``, before it claimed anything, pass after pass while the lock held.

On PostgreSQL and MySQL/MariaDB (SQLite has no row locks), stepped on the fake clock."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from tests.support import jobs_for_tests as jobs
from tests.support.engines import add, step
from tests.support.engines import new_engine as new_engine  # the fixture
from tests.support.rowlocks import locked_by_another_session
from tests.support.stores import T0, Ticker, make_store
from tickwork.engine import Engine
from tickwork.sql.schema import schedules
from tickwork.sql.store import SQLStore
from tickwork.structures import Fault, Finish, RunStatus, ScheduleSpec
from tickwork.testing import FakeClock
from tickwork_sqlite.store import SQLiteStore


@pytest.fixture(params=["postgres", "mysql"])
def server_store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[SQLStore]:
    store = make_store(request.param, "skip-locked", request, tmp_path, clock=clock)
    assert isinstance(store, SQLStore)
    yield store
    store.close()


@pytest.fixture(autouse=True)
def _reset_jobs() -> Iterator[None]:
    jobs.calls.clear()
    yield


def test_a_retry_on_a_locked_row_stalls_no_other_fire_and_runs_once_the_lock_is_gone(
    server_store: SQLStore,
    clock: FakeClock,
    new_engine: Callable[..., Engine],
    caplog: pytest.LogCaptureFixture,
) -> None:
    ticker = Ticker()
    engine = new_engine(server_store, monotonic=ticker, lookahead=0)
    add(server_store, "boom", "*/5 * * * *", retries=1, retry_backoff=timedelta(seconds=60))
    clock.set(T0 + timedelta(seconds=301))
    step(engine)  # boom fails; its retry waits a minute, holding the claim
    assert [r.attempt for r in server_store.history(schedule="boom")] == [1]
    add(server_store, "record")  # due at 6:00
    ticker.advance(61)
    clock.set(T0 + timedelta(seconds=361))
    with locked_by_another_session(server_store, "boom"), caplog.at_level(logging.WARNING, "tickwork.engine"):
        step(engine)  # the retry is due: passed over; record's fire at 6:00 runs all the same
        assert jobs.calls == ["record"]
        assert [r.attempt for r in server_store.history(schedule="boom")] == [1]
    assert "retry 2 of boom: its schedule row is locked by another transaction" in caplog.text
    ticker.advance(1)
    step(engine)
    boom = [(r.attempt, r.status) for r in server_store.history(schedule="boom")]
    assert boom == [(2, RunStatus.FAILED), (1, RunStatus.FAILED)]
    record = [(r.scheduled_for, r.status) for r in server_store.history(schedule="record")]
    assert record == [(T0 + timedelta(seconds=360), RunStatus.SUCCEEDED)]


class ParkPassedOver(SQLiteStore):
    """A SQLite store (no row locks) whose first ``passes`` parks answer as a SQL server's do
    for a row another session holds locked: passed over (``None``)."""

    passes = 2

    def park(self, node_id: str, parks: Sequence[tuple[Finish, Fault]]) -> list[bool | None]:
        if self.passes > 0:
            self.passes -= 1
            return [None] * len(parks)
        return super().park(node_id, parks)


def test_a_park_passed_over_is_kept_and_written_later_while_the_rest_runs(
    tmp_path: Path, clock: FakeClock, new_engine: Callable[..., Engine], caplog: pytest.LogCaptureFixture
) -> None:
    store = ParkPassedOver(str(tmp_path / "t.db"), clock=clock)
    store.upgrade()
    store.open()
    ticker = Ticker()
    engine = new_engine(store, monotonic=ticker, lookahead=0)
    add(store, "record")
    # A schedule this node cannot handle (an unknown time zone) is parked at its fire.
    store.add(
        ScheduleSpec("poison", "cron", "* * * * *", "tests.support.jobs_for_tests:record", timezone="UTC"),
        T0 + timedelta(minutes=1),
    )
    with store.engine.begin() as conn:
        conn.execute(update(schedules).where(schedules.c.name == "poison").values(timezone="Mars/Olympus_Mons"))
    clock.set(T0 + timedelta(seconds=61))
    with caplog.at_level(logging.WARNING, "tickwork.engine"):
        step(engine)  # the park is passed over; the rest of the pass goes on
        assert store.passes == 1
        assert jobs.calls == ["record"]
        assert store.get("poison").fault is None
        ticker.advance(0.6)
        step(engine)  # passed over again (warned once), then written
    assert store.passes == 0
    assert caplog.text.count("poison: cannot park it yet: its schedule row is locked") == 1
    poison = store.get("poison")
    assert poison.fault is not None and "Mars/Olympus_Mons" in poison.fault and poison.next_fire is None
    store.close()
