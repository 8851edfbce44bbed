"""Backfilled runs go through the engine's one run path (docs/cluster.md#backfill): they reach
the listener, the hard timeout ends them, they are retried per the schedule's ``retries``, their
bodies start under the start fence, and a missing executor is the run's failure, not a park. The
real SQLite store on a fake clock; the backfill duty is stepped by hand."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest

from tests.support import fenced_jobs
from tests.support import jobs_for_tests as jobs
from tests.support.engines import DeclaredDead, add, runs
from tests.support.stores import T0, Ticker
from tickwork.abc import BodyFence, Executor, Membership
from tickwork.engine import Engine, EngineSettings
from tickwork.engine.listener import EngineListener
from tickwork.sql.store import SQLStore
from tickwork.structures import Finish, JobCall, Outcome, RunStatus, ScheduleState
from tickwork.testing import FakeClock
from tickwork_local.executor import LocalExecutor
from tickwork_membership.single import SingleMembership

#: Guards against a hung executor thread; not a timing assertion.
WAIT_S = 10.0
YESTERDAY = T0 - timedelta(days=1)


@pytest.fixture(autouse=True)
def _reset_jobs() -> Iterator[None]:
    jobs.calls.clear()
    jobs.attempts.clear()
    fenced_jobs.started.clear()
    fenced_jobs.first_started.clear()
    fenced_jobs.gate.clear()
    yield
    fenced_jobs.gate.set()


class Recorder(EngineListener):
    def __init__(self) -> None:
        self.started: list[JobCall] = []
        self.finished: list[Finish] = []
        self.retried: list[Finish] = []

    def runs_started(self, runs: Sequence[JobCall]) -> None:
        self.started.extend(runs)

    def retries_planned(self, ended: Sequence[Finish]) -> None:
        self.retried.extend(ended)

    def runs_finished(self, results: Sequence[Finish]) -> None:
        self.finished.extend(results)


class Silent(Executor):
    """Takes every run and never reports its end (a worker that hangs)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.fences: list[BodyFence | None] = []

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        pass

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        pass

    def submit_fenced(self, call: JobCall, on_done: Callable[[Outcome], None], fence: BodyFence | None) -> None:
        self.fences.append(fence)

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        pass


@pytest.fixture
def local() -> Iterator[LocalExecutor]:
    executor = LocalExecutor(max_workers=2)
    executor.start()
    yield executor
    executor.shutdown(wait=False)


#: The memberships the test started, stopped after it (their heartbeat threads).
started: list[Membership] = []


@pytest.fixture(autouse=True)
def _stop_memberships() -> Iterator[None]:
    yield
    while started:
        started.pop().stop()


def engine_with(
    store: SQLStore, clock: FakeClock, executors: dict[str, Executor], **kw: Any
) -> tuple[Engine, Recorder]:
    membership = kw.pop("membership", None) or SingleMembership()
    started.append(membership)
    membership.start(store, "n1")
    engine = Engine(store, executors, membership, EngineSettings(node_id="n1", reap_interval=3600.0), clock=clock, **kw)
    recorder = Recorder()
    engine.listener = recorder
    return engine, recorder


def pass_until(engine: Engine, done: Callable[[], bool]) -> None:
    """Step the engine as its loop would (the backfill duty, retries due, ends) until ``done``."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, "the backfill never got there"
        engine.backfills.run()
        engine.tick()
        engine.runs.write_ends(now=True)
        time.sleep(0.01)


def test_backfilled_runs_reach_the_listener(sqlite_store: SQLStore, clock: FakeClock, local: LocalExecutor) -> None:
    add(sqlite_store, "record", "0 * * * *")
    times = [YESTERDAY, YESTERDAY + timedelta(hours=1)]
    sqlite_store.queue_backfill("record", times, overlap="allow")
    engine, recorder = engine_with(sqlite_store, clock, {"local": local})
    pass_until(engine, lambda: len(recorder.finished) == 2)
    assert sorted(c.scheduled_for for c in recorder.started) == times
    assert all(c.backfill for c in recorder.started)
    assert all(f.claim.backfill and f.outcome.status is RunStatus.SUCCEEDED for f in recorder.finished)
    assert [(r.scheduled_for, r.status) for r in runs(sqlite_store)] == [(t, RunStatus.SUCCEEDED) for t in times]
    # The schedule's own claim and next fire were never the backfill's to touch.
    schedule = sqlite_store.get("record")
    assert schedule.state is ScheduleState.IDLE and schedule.next_fire == T0 + timedelta(hours=1)


def test_a_backfilled_run_that_never_reports_is_ended_by_the_hard_timeout(
    sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "record", "0 * * * *", timeout=timedelta(seconds=30))
    sqlite_store.queue_backfill("record", [YESTERDAY])
    ticker = Ticker()
    silent = Silent()
    engine, recorder = engine_with(sqlite_store, clock, {"local": silent}, monotonic=ticker)
    engine.backfills.run()
    assert engine.backfills.in_flight == 1 and len(recorder.started) == 1
    ticker.advance(30 + engine.settings.hard_timeout_grace - 1)
    engine.runs.expire_overdue()
    assert engine.backfills.in_flight == 1  # not before its deadline
    ticker.advance(2)
    engine.runs.expire_overdue()
    engine.runs.finish_completed()
    engine.runs.write_ends(now=True)
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.TIMED_OUT and "did not report an end" in (run.error or "")
    assert engine.backfills.in_flight == 0 and [f.outcome.status for f in recorder.finished] == [RunStatus.TIMED_OUT]


def test_a_failed_backfilled_run_is_retried_per_the_schedule_s_retries(
    sqlite_store: SQLStore, clock: FakeClock, local: LocalExecutor
) -> None:
    add(sqlite_store, "fails_twice", "0 * * * *", retries=3, retry_backoff=timedelta(seconds=0.05))
    sqlite_store.queue_backfill("fails_twice", [YESTERDAY])
    engine, recorder = engine_with(sqlite_store, clock, {"local": local})
    # As for a scheduled fire, an attempt that is retried reports no end: the fire's last one does.
    pass_until(engine, lambda: len(recorder.finished) == 1)
    history = runs(sqlite_store)
    assert [(r.scheduled_for, r.attempt, r.status) for r in history] == [
        (YESTERDAY, 1, RunStatus.FAILED),
        (YESTERDAY, 2, RunStatus.FAILED),
        (YESTERDAY, 3, RunStatus.SUCCEEDED),
    ]
    assert [c.attempt for c in recorder.started] == [1, 2, 3] and all(c.backfill for c in recorder.started)
    # The attempts that were retried are told as such (their retry is due when the queue takes it).
    assert [(f.claim.attempt, f.outcome.status, f.next_fire) for f in recorder.retried] == [
        (1, RunStatus.FAILED, None),
        (2, RunStatus.FAILED, None),
    ]
    assert engine.backfills.in_flight == 0
    schedule = sqlite_store.get("fails_twice")
    assert schedule.state is ScheduleState.IDLE and schedule.next_fire == T0 + timedelta(hours=1)


def test_a_backfilled_run_with_no_retries_left_fails_once(
    sqlite_store: SQLStore, clock: FakeClock, local: LocalExecutor
) -> None:
    add(sqlite_store, "fails_twice", "0 * * * *", retries=1, retry_backoff=timedelta(seconds=0.05))
    sqlite_store.queue_backfill("fails_twice", [YESTERDAY])
    engine, recorder = engine_with(sqlite_store, clock, {"local": local})
    pass_until(engine, lambda: len(recorder.finished) == 1)
    assert [(r.attempt, r.status) for r in runs(sqlite_store)] == [(1, RunStatus.FAILED), (2, RunStatus.FAILED)]
    assert [c.attempt for c in recorder.started] == [1, 2]


def test_a_backfilled_body_starts_under_the_start_fence(sqlite_store: SQLStore, clock: FakeClock) -> None:
    """One worker, busy with a backfilled run; the next one waits in its queue, the node is
    declared dead meanwhile: that body never starts, and nothing is written for it."""
    add(sqlite_store, "held", "0 * * * *", target="tests.support.fenced_jobs:held", arguments={"name": "b"})
    sqlite_store.queue_backfill("held", [YESTERDAY, YESTERDAY + timedelta(hours=1)], overlap="allow")
    one_worker = LocalExecutor(max_workers=1)
    one_worker.start()
    try:
        membership = DeclaredDead()
        engine, recorder = engine_with(sqlite_store, clock, {"local": one_worker}, membership=membership)
        engine.backfills.run()
        assert len(recorder.started) == 2
        assert fenced_jobs.first_started.wait(WAIT_S)
        sqlite_store.release_node("n1", "node n1 stopped heartbeating; run abandoned")
        membership.count += 1
        fenced_jobs.gate.set()
        engine.drain(WAIT_S)
    finally:
        one_worker.shutdown(wait=False)
    assert len(fenced_jobs.started) == 1 and engine.not_started == 1
    assert [r.status for r in runs(sqlite_store)] == [RunStatus.ABANDONED] * 2


def test_a_missing_executor_fails_the_backfilled_run_and_parks_nothing(
    sqlite_store: SQLStore, clock: FakeClock, local: LocalExecutor
) -> None:
    add(sqlite_store, "record", "0 * * * *", executor="carrier-pigeon")
    sqlite_store.queue_backfill("record", [YESTERDAY])
    engine, recorder = engine_with(sqlite_store, clock, {"local": local})
    pass_until(engine, lambda: len(recorder.finished) == 1)
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.FAILED
    assert run.error == "not run: executor 'carrier-pigeon' is not configured on node n1"
    schedule = sqlite_store.get("record")
    assert schedule.fault is None and schedule.fault_kind is None and schedule.next_fire is not None
