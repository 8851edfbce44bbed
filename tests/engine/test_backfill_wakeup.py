"""A backfill runs at the engine's pace (docs/cluster.md#backfill): the pass that records the end
of one of the node's backfilled runs takes the next queued fire (``buffer_all``) or fills the
freed slot (``allow``), with the housekeeping's own look at the queue out of the way (the
engine's monotonic clock stopped, or its look an hour away); a retried backfilled fire is taken
the same way; the schedules' own due fires are claimed first. A real SQLite store on a fake clock,
the real local executor."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.support import backfill_jobs
from tests.support import jobs_for_tests as jobs
from tests.support.engines import add, runs
from tests.support.engines import new_engine as new_engine  # the fixture
from tests.support.stores import T0
from tickwork.engine.loop import Engine
from tickwork.sql.store import SQLStore
from tickwork.structures import Claim, RunStatus
from tickwork.testing import FakeClock

#: Guards against a hung executor thread or a loop that never wakes; not a timing assertion.
WAIT_S = 10.0


def stopped() -> float:
    """The engine's monotonic clock, stopped: a housekeeping duty that ran once is never due again."""
    return 1000.0


@pytest.fixture(autouse=True)
def fresh_jobs() -> Iterator[None]:
    backfill_jobs.started.clear()
    backfill_jobs.steps = threading.Semaphore(0)
    jobs.attempts.clear()
    yield
    backfill_jobs.steps.release(100)  # no job thread left waiting


def yesterday(hours: int) -> list[datetime]:
    start = T0 - timedelta(days=1)
    return [start + timedelta(hours=h) for h in range(hours)]


def running(store: SQLStore) -> list[datetime]:
    return [r.scheduled_for for r in runs(store) if r.status is RunStatus.RUNNING]


def started(count: int) -> Callable[[], bool]:
    return lambda: len(backfill_jobs.started) == count


def ended(store: SQLStore, moment: datetime) -> Callable[[], bool]:
    return lambda: moment not in running(store)


def passes_until(engine: Engine, predicate: Callable[[], bool]) -> None:
    """Run passes of the engine until ``predicate`` holds (bounded: the executor's threads end the runs)."""
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, "never got there"
        engine.tick()
        time.sleep(0.005)


def test_the_end_of_a_buffered_fire_starts_the_next_one(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore
) -> None:
    engine = new_engine(sqlite_store, monotonic=stopped)
    add(sqlite_store, "stepped", "0 * * * *", target="tests.support.backfill_jobs:stepped")
    times = yesterday(3)
    sqlite_store.queue_backfill("stepped", times)
    engine.tick()  # the housekeeping's one look (its clock stopped): the first fire
    for count, moment in enumerate(times, start=1):
        passes_until(engine, started(count))
        engine.tick()
        assert running(sqlite_store) == [moment]  # the next waits for its end
        backfill_jobs.steps.release()
        passes_until(engine, ended(sqlite_store, moment))
        # The pass that wrote the end took the next fire (none is left after the last).
        assert running(sqlite_store) == times[count : count + 1]
    assert [(r.scheduled_for, r.status) for r in runs(sqlite_store)] == [(t, RunStatus.SUCCEEDED) for t in times]
    assert backfill_jobs.started == [t.isoformat() for t in times]


def test_the_end_of_an_allowed_fire_fills_its_slot(new_engine: Callable[..., Engine], sqlite_store: SQLStore) -> None:
    engine = new_engine(sqlite_store, monotonic=stopped)
    add(
        sqlite_store,
        "stepped",
        "0 * * * *",
        target="tests.support.backfill_jobs:stepped",
        overlap="allow",
        max_concurrent=2,
    )
    times = yesterday(4)
    sqlite_store.queue_backfill("stepped", times, overlap="allow")
    engine.tick()
    passes_until(engine, lambda: len(backfill_jobs.started) == 2)
    assert running(sqlite_store) == times[:2]
    backfill_jobs.steps.release()
    passes_until(engine, lambda: len(backfill_jobs.started) == 3)
    assert len(running(sqlite_store)) == 2
    backfill_jobs.steps.release(3)
    passes_until(engine, lambda: not running(sqlite_store) and len(runs(sqlite_store)) == 4)
    assert {r.status for r in runs(sqlite_store)} == {RunStatus.SUCCEEDED}


def test_a_retried_backfilled_fire_is_taken_by_the_pass_that_queued_it_again(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore
) -> None:
    engine = new_engine(sqlite_store, monotonic=stopped)
    add(sqlite_store, "fails_twice", "0 * * * *", retries=2)
    (moment,) = yesterday(1)
    sqlite_store.queue_backfill("fails_twice", [moment])
    engine.tick()
    passes_until(engine, lambda: len([r for r in runs(sqlite_store) if r.status is RunStatus.SUCCEEDED]) == 1)
    assert [(r.attempt, r.status) for r in runs(sqlite_store)] == [
        (1, RunStatus.FAILED),
        (2, RunStatus.FAILED),
        (3, RunStatus.SUCCEEDED),
    ]


def test_the_schedules_own_due_fires_are_claimed_before_a_backfill(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore, clock: FakeClock
) -> None:
    engine = new_engine(sqlite_store, monotonic=stopped, batch_size=1, lookahead=0.0)
    add(sqlite_store, "stepped", "0 * * * *", target="tests.support.backfill_jobs:stepped")
    engine.tick()  # the housekeeping's one look, with nothing queued yet
    (moment,) = yesterday(1)
    sqlite_store.queue_backfill("stepped", [moment], overlap="allow")
    engine.backfills.ended()  # as when one of its backfilled runs ended
    add(sqlite_store, "record", "* * * * *")
    add(sqlite_store, "with_args", "* * * * *", arguments={"city": "x"})
    clock.advance(60)
    assert engine.tick()  # a full batch of its own due fires: the backfill waits
    assert moment not in [r.scheduled_for for r in runs(sqlite_store)]
    # The rest of its own due fires (the claim grew to two: nothing waits on the node, and one
    # was left), then nothing more due: the backfill's turn, in this pass.
    assert not engine.tick()
    assert {r.scheduled_for for r in runs(sqlite_store)} == {T0 + timedelta(seconds=60), moment}
    assert moment in running(sqlite_store)
    backfill_jobs.steps.release()
    passes_until(engine, lambda: not running(sqlite_store))
    assert {r.status for r in runs(sqlite_store)} == {RunStatus.SUCCEEDED} and len(runs(sqlite_store)) == 3


def test_a_sleeping_loop_runs_a_backfill_through_by_its_ends(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore
) -> None:
    # Every look but the one an end asks for is an hour away: the loop would sleep max_sleep.
    hour = {"max_sleep": 30.0, "renew_interval": 3600.0, "takeover_interval": 3600.0}
    engine = new_engine(sqlite_store, **hour)
    add(sqlite_store, "stepped", "0 * * * *", target="tests.support.backfill_jobs:stepped")
    engine.tick()  # the housekeeping's look with nothing queued: its next is reap_interval away
    times = yesterday(5)
    sqlite_store.queue_backfill("stepped", times)
    engine.backfills.run()  # the first fire, as a look at the queue takes it
    backfill_jobs.steps.release(len(times))
    loop = threading.Thread(target=engine.run_forever, daemon=True)
    loop.start()
    try:
        deadline = time.monotonic() + WAIT_S  # each end would otherwise wait 30 s for the next look
        while len([r for r in runs(sqlite_store) if r.status is RunStatus.SUCCEEDED]) < len(times):
            assert time.monotonic() < deadline, f"only {len(backfill_jobs.started)} of {len(times)} fires started"
            time.sleep(0.02)
    finally:
        engine.stop()
        loop.join(5)
    assert backfill_jobs.started == [t.isoformat() for t in times]


def test_the_end_of_a_buffered_fire_and_the_take_of_the_next_are_one_store_call(
    new_engine: Callable[..., Engine], sqlite_store: SQLStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass that collects a backfilled run's end carries it in its take (one transaction:
    :meth:`Store.take_backfills` with ``ends``), never as an end_attempt of its own."""
    takes: list[tuple[list[datetime], list[datetime]]] = []
    take = sqlite_store.take_backfills

    def spy(node_id: str, **kwargs: Any) -> list[Claim]:
        taken = take(node_id, **kwargs)
        takes.append(([f.claim.scheduled_for for f in kwargs.get("ends", ())], [c.scheduled_for for c in taken]))
        return taken

    def no_end_attempt(*args: object, **kwargs: object) -> None:
        raise AssertionError("a backfilled run's end was written on its own")

    monkeypatch.setattr(sqlite_store, "take_backfills", spy)
    monkeypatch.setattr(sqlite_store, "end_attempt", no_end_attempt)
    engine = new_engine(sqlite_store, monotonic=stopped)
    add(sqlite_store, "stepped", "0 * * * *", target="tests.support.backfill_jobs:stepped")
    times = yesterday(3)
    sqlite_store.queue_backfill("stepped", times)
    engine.tick()
    backfill_jobs.steps.release(len(times))
    passes_until(engine, lambda: len([r for r in runs(sqlite_store) if r.status is RunStatus.SUCCEEDED]) == 3)
    carried = [(ends, taken) for ends, taken in takes if ends]
    # Each end rode on the take that started the next fire; the last one's on a take of nothing.
    assert carried == [([times[0]], [times[1]]), ([times[1]], [times[2]]), ([times[2]], [])]
