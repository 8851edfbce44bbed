"""Stores on a fake clock (the public ``clock`` seam of MemoryStore and SQLStore): exact
boundaries the real-clock contract cannot pin, through the same cached statements production
runs (the clock is a parameter read at each execution, not a value built into a statement)."""

from __future__ import annotations

from datetime import timedelta

from tests.support.stores import T0
from tickwork.abc import Store
from tickwork.structures import Finish, Outcome, RunStatus, ScheduleSpec, ScheduleState
from tickwork.testing import FakeClock

OK = Outcome(RunStatus.SUCCEEDED)


def spec(name: str, **kw: object) -> ScheduleSpec:
    return ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target="m:f", **kw)  # type: ignore[arg-type]


def test_the_store_reads_the_clock_at_every_statement(store: Store, clock: FakeClock) -> None:
    assert store.now() == T0
    clock.advance(5)
    assert store.now() == T0 + timedelta(seconds=5)


def test_due_exactly_at_the_clock_and_not_a_millisecond_before(store: Store, clock: FakeClock) -> None:
    store.add(spec("a"), T0 + timedelta(seconds=10))
    # The same (cached) claim statement runs each time; only the clock parameter moves.
    assert store.claim_due("n1", limit=10, buckets=None) == []
    clock.advance(9.999)
    assert store.claim_due("n1", limit=10, buckets=None) == []
    clock.advance(0.001)
    (c,) = store.claim_due("n1", limit=10, buckets=None)
    assert c.scheduled_for == c.claimed_at == T0 + timedelta(seconds=10)
    clock.advance(2)
    assert store.finish("n1", [Finish(c, OK, T0 + timedelta(minutes=1))]) == [True]
    (run,) = store.history()
    assert run.started_at == T0 + timedelta(seconds=10) and run.finished_at == T0 + timedelta(seconds=12)


def test_claims_expire_by_the_clock(store: Store, clock: FakeClock) -> None:
    store.add(spec("slow", timeout=timedelta(seconds=10)), T0)
    store.add(spec("kept", timeout=timedelta(seconds=10)), T0)
    claims = store.claim_due("n1", limit=10, buckets=None)
    clock.advance(14)
    store.renew("n1", [c for c in claims if c.spec.name == "kept"])
    assert store.reap_expired(5) == 0  # 14 s < 10 s timeout + 5 s grace
    clock.advance(2)
    assert store.reap_expired(5) == 1
    assert store.get("slow").state is ScheduleState.IDLE and store.get("kept").state is ScheduleState.RUNNING


def test_heartbeats_and_fire_now_follow_the_clock(store: Store, clock: FakeClock) -> None:
    assert store.heartbeat("n1") == T0
    clock.advance(3)
    assert store.heartbeat("n1") == T0 + timedelta(seconds=3)
    store.add(spec("a"), T0 + timedelta(days=1))
    assert store.fire_now("a").next_fire == T0 + timedelta(seconds=3)


def test_prune_history_keeps_recent_and_running(store: Store, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    (c,) = store.claim_due("n1", limit=10, buckets=None)
    store.finish("n1", [Finish(c, OK, T0 + timedelta(days=1))])
    clock.set(T0 + timedelta(days=1))
    store.claim_due("n1", limit=10, buckets=None)  # a running run stays
    clock.set(T0 + timedelta(days=40))
    assert store.prune_history(timedelta(days=30)) == 1  # type: ignore[attr-defined]
    assert [r.status for r in store.history()] == [RunStatus.RUNNING]
