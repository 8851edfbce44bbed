"""Faults contained to the smallest unit: a claim that cannot be handled parks its schedule and
the others go on; the loop survives anything; no claim of the node is stranded."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import SwitchableMembership, add, make_engine, runs, step, step_until_attempts
from tests.support.engines import new_engine as new_engine  # the fixture
from tests.support.faulty_store import FaultyStore
from tests.support.stores import T0
from tickwork import schedules as admin
from tickwork.abc import Trigger
from tickwork.config import Config, PluginChoice, SchedulerConfig
from tickwork.engine import Engine
from tickwork.errors import StoreError
from tickwork.node import Node
from tickwork.plugin import Registry, hookimpl
from tickwork.plugin.manager import PluginManager
from tickwork.sql.store import SQLStore
from tickwork.structures import RunStatus, ScheduleSpec, ScheduleState
from tickwork.testing import FakeClock
from tickwork_membership.single import SingleMembership


def fields_of(spec: ScheduleSpec) -> dict[str, object]:
    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}


@pytest.fixture(autouse=True)
def _reset_jobs() -> Iterator[None]:
    jobs.calls.clear()
    jobs.attempts.clear()
    yield


def add_raw(store: SQLStore, name: str, kind: str = "cron", expression: str = "* * * * *", **kw: object) -> None:
    """Store a schedule as an older or differently equipped node could have (no checks here)."""
    base = ScheduleSpec(name, "cron", "* * * * *", "tests.support.jobs_for_tests:record")
    spec = ScheduleSpec.stored({**fields_of(base), "trigger_kind": kind, "expression": expression, **kw})
    store.add(spec, T0 + timedelta(minutes=1) if expression == "* * * * *" else T0 + timedelta(hours=1))


@pytest.mark.parametrize(
    ("kind", "timezone", "fault"),
    [
        ("sundial", "UTC", "unknown trigger plugin 'sundial'"),
        ("cron", "Mars/Olympus_Mons", "Mars/Olympus_Mons"),
    ],
)
def test_a_claim_that_cannot_be_handled_parks_its_schedule_and_the_rest_runs(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine], kind: str, timezone: str, fault: str
) -> None:
    engine = new_engine(sqlite_store, lookahead=0)
    add(sqlite_store, "record")
    add_raw(sqlite_store, "poison", kind, timezone=timezone)
    clock.advance(60)
    step(engine)
    clock.advance(60)
    step(engine)
    assert jobs.calls == ["record", "record"]
    poison = sqlite_store.get("poison")
    assert poison.state is ScheduleState.IDLE and poison.next_fire is None
    assert poison.fault is not None and fault in poison.fault
    (run,) = sqlite_store.history(schedule="poison")
    assert run.status is RunStatus.FAILED and (run.error or "").startswith("not run: ")
    assert sqlite_store.get("record").next_fire == T0 + timedelta(minutes=3)


def test_a_missing_executor_parks_the_schedule(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sqlite_store)
    add(sqlite_store, "record", executor="carrier-pigeon")
    clock.advance(60)
    step(engine)
    s = sqlite_store.get("record")
    assert s.next_fire is None and "'carrier-pigeon' is not configured on node n1" in (s.fault or "")


class Fickle(Trigger):
    """Fires every minute until ``broken``; then computing a next fire raises."""

    kind = "fickle"
    broken = False

    def next_after(self, after: datetime) -> datetime | None:
        if Fickle.broken:
            raise OverflowError("date value out of range")
        return after.replace(second=0, microsecond=0) + timedelta(minutes=1)


class FicklePlugin:
    @hookimpl
    def tickwork_register_triggers(self, registry: Registry[type[Trigger]]) -> None:
        registry.add("fickle", Fickle)


def test_a_fault_after_the_run_records_its_outcome_and_parks_until_enabled_again(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    manager = PluginManager(extra=[FicklePlugin()])
    engine = new_engine(sqlite_store, manager=manager)
    admin.add(sqlite_store, ScheduleSpec("fickle", "fickle", "1m", "tests.support.jobs_for_tests:record"), manager)
    add(sqlite_store, "record", name="steady")
    clock.advance(60)
    engine.tick()  # both start
    Fickle.broken = True
    try:
        engine.drain(5)  # both end: the next fire of "fickle" cannot be computed
    finally:
        Fickle.broken = False
    assert jobs.calls == ["record", "record"]
    run = sqlite_store.history(schedule="fickle")[0]
    assert run.status is RunStatus.SUCCEEDED
    assert "schedule parked after the run: OverflowError: date value out of range" in (run.error or "")
    parked = sqlite_store.get("fickle")
    assert parked.next_fire is None and parked.fault == "OverflowError: date value out of range"
    assert sqlite_store.get("steady").next_fire == T0 + timedelta(minutes=2)
    fixed = admin.set_enabled(sqlite_store, "fickle", True, manager)
    assert fixed.fault is None and fixed.next_fire == T0 + timedelta(minutes=2)
    clock.advance(60)
    step(engine)
    assert jobs.calls == ["record"] * 4


def test_huge_retries_with_no_backoff_are_capped_and_do_not_stop_the_node(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sqlite_store)
    add_raw(
        sqlite_store,
        "boom",
        expression="0 * * * *",
        target="tests.support.jobs_for_tests:boom",
        retries=5000,
        retry_backoff=timedelta(0),
    )
    clock.advance(3600)
    for _ in range(300):
        step(engine)
    history = sqlite_store.history(limit=1000, schedule="boom")
    assert len(history) == 101  # the first attempt and at most 100 retries
    assert sqlite_store.get("boom").state is ScheduleState.IDLE


class Unsteady(SingleMembership):
    """Owned buckets cannot be computed for a while (a bug in a membership plugin)."""

    # Three passes of the loop, and the backfill duty's read in the first one (it logs its own
    # error and tries again at its next turn).
    failures = 4

    def owned_buckets(self) -> Sequence[int] | None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("ring is inconsistent")
        return None


def test_the_loop_survives_any_error_logs_its_traceback_once_and_backs_off(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine], caplog: pytest.LogCaptureFixture
) -> None:
    engine = new_engine(sqlite_store, membership=Unsteady(), lookahead=0)
    add(sqlite_store, "record")
    clock.advance(60)
    with caplog.at_level(logging.ERROR, logger="tickwork.engine"):
        waits = [engine.run_once() for _ in range(3)]
    assert waits == [0.5, 1.0, 2.0]
    passes = [r for r in caplog.records if r.getMessage().startswith("engine pass failed")]
    assert len(passes) == 3 and all("ring is inconsistent" in r.getMessage() for r in passes)
    assert [bool(r.exc_info) for r in passes] == [True, False, False]  # the traceback once
    engine.run_once()
    engine.drain(5)
    assert jobs.calls == ["record"]


class Unreachable(SingleMembership):
    """The store cannot be reached for a while: the first store call of each pass fails (the claim
    reads the owned buckets first; the backfill duty's read of the first pass fails too)."""

    failures = 6

    def owned_buckets(self) -> Sequence[int] | None:
        if self.failures:
            self.failures -= 1
            raise StoreError("connection refused (test)")
        return None


def test_a_store_outage_is_probed_often_warned_once_and_its_end_logged(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine], caplog: pytest.LogCaptureFixture
) -> None:
    engine = new_engine(sqlite_store, membership=Unreachable(), lookahead=0)
    add(sqlite_store, "record")
    clock.advance(60)
    with caplog.at_level(logging.WARNING, logger="tickwork.engine"):
        waits = [engine.run_once() for _ in range(5)]
        # Short and capped: the node resumes at most half a second after the database answers
        # (a back-off doubling to 10 s cost the chaos benchmark up to 4 s of fires).
        assert waits == [0.1, 0.2, 0.4, 0.5, 0.5]
        engine.run_once()
        engine.drain(5)
    lines = [r.getMessage() for r in caplog.records]
    assert len([m for m in lines if m.startswith("cannot reach the store")]) == 1, lines
    assert any(m.startswith("database reachable again after") for m in lines), lines
    assert jobs.calls == ["record"]


def test_reconcile_releases_a_claim_the_engine_does_not_track(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sqlite_store, lookahead=0)
    add(sqlite_store, "record")
    clock.advance(60)
    (lost,) = sqlite_store.claim_due("n1", limit=1, buckets=None)  # a claim whose answer was lost
    assert engine.reconcile() == 1
    s = sqlite_store.get("record")
    assert s.state is ScheduleState.IDLE and s.next_fire == lost.scheduled_for
    (abandoned,) = sqlite_store.history()
    assert abandoned.status is RunStatus.ABANDONED and "no longer tracked" in (abandoned.error or "")
    step(engine)  # claimed again: already recorded, so advanced without running it
    assert jobs.calls == [] and len(sqlite_store.history()) == 1
    assert sqlite_store.get("record").next_fire == T0 + timedelta(minutes=2)


def test_a_retry_whose_start_fails_stays_pending_and_runs_later(tmp_path: Path, clock: FakeClock) -> None:
    store = FaultyStore(str(tmp_path / "t.db"), clock=clock)
    store.upgrade()
    store.open()
    engine, executor = make_engine(store, clock)
    try:
        add(store, "fails_twice", "0 * * * *", retries=3, retry_backoff=timedelta(seconds=0.01))
        clock.advance(3600)
        step(engine)
        store.fail_next.append("start_attempt")
        store.lost_next.append("start_attempt")
        for _ in range(2):
            with pytest.raises(Exception, match="injected"):
                step_until_attempts(engine, 3)
        step_until_attempts(engine, 3)
        assert [(r.attempt, r.status) for r in runs(store)] == [
            (1, RunStatus.FAILED),
            (2, RunStatus.FAILED),
            (3, RunStatus.SUCCEEDED),
        ]
        assert store.get("fails_twice").state is ScheduleState.IDLE
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
        store.close()


def test_a_held_fire_obeys_the_misfire_policy_when_it_starts(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    membership = SwitchableMembership()
    engine = new_engine(sqlite_store, membership=membership, lookahead=5.0)
    add(sqlite_store, "record")
    clock.advance(58)
    step(engine)
    assert len(engine.held) == 1
    membership.ok = False
    clock.advance(42)  # 40 s late by the time the node may start it; grace 30 s
    step(engine)
    membership.ok = True
    step(engine)
    assert jobs.calls == []
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.SKIPPED and (run.error or "").startswith("missed by 40.0s")


def test_a_failed_step_of_a_graceful_stop_leaves_the_next_ones_to_run(tmp_path: Path, clock: FakeClock) -> None:
    store = FaultyStore(str(tmp_path / "t.db"), clock=clock)
    store.upgrade()
    store.open()
    engine, executor = make_engine(store, clock, lookahead=10.0, start_lead=0.0)
    jobs.gate.clear()
    try:
        add(store, "blocked", "0 * * * * *")
        clock.advance(60)
        engine.tick()
        assert len(engine.in_flight) == 1
        add(store, "record", "30 * * * * *")
        clock.advance(28)  # "record" is due in 2 s: claimed ahead and held
        engine.tick()
        assert [c.spec.name for c in engine.held] == ["record"]
        jobs.gate.set()
        store.fail_next.append("unclaim")
        with pytest.raises(StoreError, match="before unclaim"):
            engine.shutdown(timeout=5)
        # The give-back failed first; the run that ended meanwhile was recorded all the same, and
        # the fire that could not be given back is still this node's (the next start releases it).
        assert [r.status for r in runs(store) if r.schedule == "blocked"] == [RunStatus.SUCCEEDED]
        assert jobs.calls == ["blocked"]
        assert [c.spec.name for c in engine.held] == ["record"]
    finally:
        jobs.gate.set()
        executor.shutdown(wait=False)
        engine.membership.stop()
        store.close()


def test_after_a_graceful_stop_nothing_is_left_running(tmp_path: Path, clock: FakeClock) -> None:
    store = FaultyStore(str(tmp_path / "t.db"), clock=clock)
    store.upgrade()
    store.open()
    add(store, "record")
    add(store, "fails_twice", "* * * * *", retries=3, retry_backoff=timedelta(seconds=30))
    config = Config(scheduler=SchedulerConfig(node_id="n1", lookahead=0), store=PluginChoice("sqlite", {}))
    node = Node(config, store=store, clock=clock)
    node.start()
    clock.advance(60)
    node.engine.tick()
    node.engine.drain(5)
    node.engine.tick()  # the failed attempt waits for its retry
    store.lost_next.append("claim_due")
    clock.advance(60)
    node.engine.run_once()  # claims both, but the answer is lost
    node.shutdown()
    store.open()
    assert all(s.state is ScheduleState.IDLE for s in store.list_schedules())
    assert all(r.status is not RunStatus.RUNNING for r in store.history(limit=100))
    store.close()
