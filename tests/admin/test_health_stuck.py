"""The ``stuck`` health state: a hand-off no worker reported started within its executor's
``pickup_timeout`` (marked in its row by the executors' maintenance step), and the fires skipped
behind an open hand-off, which count against health. On the memory store with a fake clock: the
rows are written through the store's public methods, as a node and a worker write them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.admin.health import Health, health_of
from tickwork.structures import (
    HANDOFF_BLOCKED,
    HANDOFF_STUCK,
    Finish,
    Outcome,
    RunStatus,
    ScheduleHealth,
    ScheduleSpec,
)
from tickwork.testing import FakeClock, MemoryStore

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NOTE = f"{HANDOFF_STUCK}no worker reported it started within pickup_timeout = 60s"


def _store() -> tuple[MemoryStore, FakeClock]:
    clock = FakeClock(START)
    store = MemoryStore(clock=clock)
    store.open()
    spec = ScheduleSpec(name="report", trigger_kind="cron", expression="* * * * *", target="t", executor="celery")
    store.add(spec, clock())
    return store, clock


def _fire(store: MemoryStore, clock: FakeClock, outcome: Outcome) -> int:
    """The next minute's fire, claimed and ended with ``outcome``; the run's id."""
    clock.advance(60)
    (claim,) = store.claim_due("n1", limit=1, buckets=None)
    assert claim.run_id is not None
    assert store.finish("n1", [Finish(claim, outcome, clock() + timedelta(minutes=1))]) == [True]
    return claim.run_id


def _blocked(run_id: int, stuck: bool) -> Outcome:
    said = f"; {HANDOFF_STUCK}no worker reported it started" if stuck else ""
    error = f"{HANDOFF_BLOCKED}(run {run_id}, scheduled for X) is still submitted{said}"
    return Outcome(RunStatus.SKIPPED, error=error)


def _health(store: MemoryStore) -> ScheduleHealth:
    schedule = store.get("report")
    return health_of(store, [schedule])[schedule.id]


def test_a_handoff_is_stuck_once_marked_and_names_the_way_out() -> None:
    store, clock = _store()
    run_id = _fire(store, clock, Outcome(RunStatus.SUBMITTED))
    assert _health(store).state is Health.HEALTHY  # handed off, the pickup window still open
    clock.advance(61)
    assert [r.id for r in store.mark_stuck_handoffs("celery", 60, NOTE)] == [run_id]
    health = _health(store)
    assert health.state is Health.STUCK
    assert f"run {run_id}" in health.reason and "pickup_timeout = 60s" in health.reason
    assert "tickwork jobs release report" in health.reason


def test_fires_skipped_behind_a_stuck_handoff_keep_it_stuck_past_the_window_of_recent_runs() -> None:
    store, clock = _store()
    run_id = _fire(store, clock, Outcome(RunStatus.SUBMITTED))
    clock.advance(61)
    store.mark_stuck_handoffs("celery", 60, NOTE)
    for _ in range(3):
        _fire(store, clock, _blocked(run_id, stuck=True))
    health = _health(store)
    assert health.state is Health.STUCK and "3 later fire(s) skipped" in health.reason
    # The next fire, claimed and not yet told it is blocked (``running`` for that instant), does
    # not hide it: a probe asking then must not see the schedule healthy.
    clock.advance(60)
    (claim,) = store.claim_due("n1", limit=1, buckets=None)
    assert _health(store).state is Health.STUCK
    assert store.finish("n1", [Finish(claim, _blocked(run_id, stuck=True), clock() + timedelta(minutes=1))]) == [True]
    # More skips than the recent runs read: the stuck run left the window, the skips say it.
    for _ in range(25):
        _fire(store, clock, _blocked(run_id, stuck=True))
    assert _health(store).state is Health.STUCK


def test_fires_skipped_behind_a_started_handoff_make_it_late() -> None:
    store, clock = _store()
    run_id = _fire(store, clock, Outcome(RunStatus.SUBMITTED))
    assert store.report_handoff(run_id, RunStatus.STARTED, expect={RunStatus.SUBMITTED}) == (True, RunStatus.STARTED)
    assert _health(store).state is Health.HEALTHY  # running on a worker, nothing skipped yet
    _fire(store, clock, Outcome(RunStatus.SKIPPED, error=f"{HANDOFF_BLOCKED}(run {run_id}, ...) is still started"))
    health = _health(store)
    assert health.state is Health.LATE and "1 later fire(s) skipped" in health.reason


def test_a_released_handoff_leaves_the_schedule_healthy_and_old_skips_no_longer_count() -> None:
    store, clock = _store()
    run_id = _fire(store, clock, Outcome(RunStatus.SUBMITTED))
    clock.advance(61)
    store.mark_stuck_handoffs("celery", 60, NOTE)
    _fire(store, clock, _blocked(run_id, stuck=True))
    assert _health(store).state is Health.STUCK
    (released,) = store.release_handoffs("report", "released by alice")
    assert released.id == run_id
    assert _health(store).state is Health.HEALTHY
    _fire(store, clock, Outcome(RunStatus.SUBMITTED))
    assert _health(store).state is Health.HEALTHY


def test_other_skips_do_not_count_against_health() -> None:
    store, clock = _store()
    _fire(store, clock, Outcome(RunStatus.SUCCEEDED))
    _fire(store, clock, Outcome(RunStatus.SKIPPED, error="missed: the node was down"))
    assert _health(store).state is Health.HEALTHY
