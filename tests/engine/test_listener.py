"""The engine's listener seam: batched events, and a listener that raises never stops the engine."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from tests.support import jobs_for_tests as jobs
from tests.support.engines import add, make_engine, step, step_until_attempts
from tests.support.stores import T0
from tickwork.engine.listener import EngineListener, SkippedFire
from tickwork.sql.store import SQLStore
from tickwork.structures import Finish, JobCall, RunStatus
from tickwork.testing import FakeClock


class Recorder(EngineListener):
    def __init__(self) -> None:
        self.started: list[list[JobCall]] = []
        self.finished: list[list[Finish]] = []
        self.skipped: list[list[SkippedFire]] = []
        self.claims: list[int] = []
        self.retries: list[list[Finish]] = []

    def runs_started(self, runs: Sequence[JobCall]) -> None:
        self.started.append(list(runs))

    def runs_finished(self, results: Sequence[Finish]) -> None:
        self.finished.append(list(results))

    def fires_skipped(self, skipped: Sequence[SkippedFire]) -> None:
        self.skipped.append(list(skipped))

    def claimed(self, count: int, seconds: float) -> None:
        self.claims.append(count)

    def retries_planned(self, ended: Sequence[Finish]) -> None:
        self.retries.append(list(ended))


class Exploding(EngineListener):
    def runs_started(self, runs: Sequence[JobCall]) -> None:
        raise RuntimeError("observer bug")

    def runs_finished(self, results: Sequence[Finish]) -> None:
        raise RuntimeError("observer bug")


def test_runs_are_reported_in_batches(sqlite_store: SQLStore, clock: FakeClock) -> None:
    jobs.calls.clear()
    for i in range(5):
        add(sqlite_store, "record", name=f"r{i}")
    recorder = Recorder()
    engine, executor = make_engine(sqlite_store, clock, lookahead=0)
    engine.listener = recorder
    try:
        clock.advance(60)
        step(engine)
        step(engine)
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
    assert [len(batch) for batch in recorder.started] == [5]
    assert sorted(c.schedule for c in recorder.started[0]) == [f"r{i}" for i in range(5)]
    assert sum(len(b) for b in recorder.finished) == 5
    assert all(f.outcome.status is RunStatus.SUCCEEDED for b in recorder.finished for f in b)
    assert 5 in recorder.claims


def test_skipped_fires_are_reported(sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "record")
    recorder = Recorder()
    engine, executor = make_engine(sqlite_store, clock, lookahead=0)
    engine.listener = recorder
    try:
        clock.set(T0 + timedelta(seconds=160))  # due at +60 and +120, both past the grace
        step(engine)
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
    skipped = [s for batch in recorder.skipped for s in batch]
    assert sorted(s.scheduled_for - T0 for s in skipped) == [timedelta(seconds=60), timedelta(seconds=120)]
    assert recorder.started == []


def test_a_raising_listener_is_ignored(sqlite_store: SQLStore, clock: FakeClock) -> None:
    jobs.calls.clear()
    add(sqlite_store, "record")
    from tickwork.engine import Engine, EngineSettings
    from tickwork_local.executor import LocalExecutor
    from tickwork_membership.single import SingleMembership

    executor = LocalExecutor(max_workers=2)
    executor.start()
    membership = SingleMembership()
    membership.start(sqlite_store, "n1")
    engine = Engine(
        sqlite_store,
        {"local": executor},
        membership,
        EngineSettings(node_id="n1", lookahead=0, reap_interval=3600.0),
        clock=clock,
        listener=Exploding(),
    )
    try:
        clock.advance(60)
        step(engine)
        step(engine)
    finally:
        executor.shutdown(wait=False)
        membership.stop()
    assert jobs.calls == ["record"]
    (run,) = sqlite_store.history()
    assert run.status is RunStatus.SUCCEEDED


def test_a_failed_attempt_with_a_retry_left_is_reported_as_a_planned_retry(
    sqlite_store: SQLStore, clock: FakeClock
) -> None:
    jobs.attempts.clear()
    add(sqlite_store, "fails_twice", "0 * * * *", retries=3, retry_backoff=timedelta(seconds=0.05))
    recorder = Recorder()
    engine, executor = make_engine(sqlite_store, clock, lookahead=0)
    engine.listener = recorder
    try:
        clock.advance(3600)
        step_until_attempts(engine, 3)
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
    retried = [f for batch in recorder.retries for f in batch]
    assert [(f.claim.attempt, f.outcome.status) for f in retried] == [(1, RunStatus.FAILED), (2, RunStatus.FAILED)]
    assert isinstance(retried[0].outcome.exception, RuntimeError)
    assert all(f.next_fire is not None and f.finished_at is not None and f.next_fire > f.finished_at for f in retried)
    # Only the attempt that ended the fire comes through runs_finished; each attempt started.
    ended = [f for batch in recorder.finished for f in batch]
    assert [(f.claim.attempt, f.outcome.status) for f in ended] == [(3, RunStatus.SUCCEEDED)]
    assert sorted(c.attempt for batch in recorder.started for c in batch) == [1, 2, 3]
