"""The engine on a fake clock: what fires, when, how it ends, and what is skipped — with the real
SQLite store and the real local executor (threads and asyncio)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import SwitchableMembership, add, make_engine, runs, step, step_until_attempts
from tests.support.engines import new_engine as new_engine  # the fixture
from tests.support.stores import T0, Ticker
from tickwork.config import Config, PluginChoice, SchedulerConfig
from tickwork.engine import Engine
from tickwork.errors import StoreError
from tickwork.node import Node
from tickwork.sql.store import SQLStore
from tickwork.structures import MisfirePolicy, RunStatus, ScheduleState
from tickwork.testing import FakeClock
from tickwork_membership.single import SingleMembership
from tickwork_sqlite.store import SQLiteStore


@pytest.fixture(autouse=True)
def _reset_jobs() -> Iterator[None]:
    jobs.calls.clear()
    jobs.gate.clear()
    yield
    jobs.gate.set()


@pytest.fixture
def engine(sqlite_store: SQLStore, clock: FakeClock) -> Iterator[Engine]:
    eng, executor = make_engine(sqlite_store, clock)
    yield eng
    executor.shutdown(wait=False)
    eng.membership.stop()


def test_fires_once_at_due_time_and_not_before(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "record")
    assert sqlite_store.get("record").next_fire == T0 + timedelta(minutes=1)
    step(engine)
    clock.advance(59.999)
    step(engine)
    assert jobs.calls == []
    clock.advance(0.001)
    step(engine)
    step(engine)
    assert jobs.calls == ["record"]
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.SUCCEEDED and run.scheduled_for == T0 + timedelta(minutes=1)
    assert run.node == "n1"
    s = sqlite_store.get("record")
    assert s.state is ScheduleState.IDLE and s.next_fire == T0 + timedelta(minutes=2)


def test_a_running_schedule_is_not_fired_again_and_skips_are_recorded(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "blocked", "* * * * * *")
    clock.advance(1)
    engine.tick()
    assert len(engine.in_flight) == 1
    clock.advance(5)
    engine.tick()
    assert len(engine.in_flight) == 1, "fired again while the previous run was active"
    jobs.gate.set()
    engine.drain(5)
    history = runs(sqlite_store)
    assert [r.status for r in history] == [RunStatus.SUCCEEDED] + [RunStatus.SKIPPED] * 5
    assert [r.scheduled_for for r in history] == [T0 + timedelta(seconds=s) for s in range(1, 7)]
    assert all("still active" in (r.error or "") for r in history[1:])
    assert sqlite_store.get("blocked").next_fire == T0 + timedelta(seconds=7)


def test_misfire_skip_does_not_run_a_late_fire(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "record")
    clock.set(T0 + timedelta(seconds=160))  # due at +60: 100 s late, grace 30 s
    step(engine)
    assert jobs.calls == []
    history = runs(sqlite_store)
    assert [(r.scheduled_for - T0, r.status) for r in history] == [
        (timedelta(seconds=60), RunStatus.SKIPPED),
        (timedelta(seconds=120), RunStatus.SKIPPED),
    ]
    assert "missed by 100.0s" in (history[0].error or "")
    assert "misfire policy skip" in (history[1].error or "")
    assert sqlite_store.get("record").next_fire == T0 + timedelta(seconds=180)


def test_misfire_once_coalesces_into_one_run(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "record", misfire=MisfirePolicy.ONCE)
    clock.set(T0 + timedelta(seconds=160))
    step(engine)
    assert jobs.calls == ["record"]
    assert [(r.scheduled_for - T0, r.status) for r in runs(sqlite_store)] == [
        (timedelta(seconds=60), RunStatus.SUCCEEDED),
        (timedelta(seconds=120), RunStatus.SKIPPED),
    ]
    assert sqlite_store.get("record").next_fire == T0 + timedelta(seconds=180)


def test_misfire_all_runs_each_missed_time_within_grace(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "record", "*/10 * * * * *", misfire=MisfirePolicy.ALL)
    clock.set(T0 + timedelta(seconds=65))
    for _ in range(5):
        step(engine)
    assert jobs.calls == ["record"] * 3
    assert [(int((r.scheduled_for - T0).total_seconds()), r.status.value) for r in runs(sqlite_store)] == [
        (10, "skipped"),
        (20, "skipped"),
        (30, "skipped"),
        (40, "succeeded"),
        (50, "succeeded"),
        (60, "succeeded"),
    ]


def test_soft_timeout_in_thread_mode(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "sleepy", timeout=timedelta(seconds=0.2))
    clock.advance(60)
    step(engine)
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.TIMED_OUT
    assert "threads cannot be killed" in (run.error or "")


def test_async_jobs_run_on_the_loop_and_time_out_by_cancellation(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "async_record")
    add(sqlite_store, "async_forever", timeout=timedelta(seconds=0.2))
    clock.advance(60)
    step(engine)
    status = {r.schedule: r for r in runs(sqlite_store)}
    assert status["async_record"].status is RunStatus.SUCCEEDED and jobs.calls == ["async"]
    assert status["async_forever"].status is RunStatus.TIMED_OUT
    assert "cancelled" in (status["async_forever"].error or "")


def test_exceptions_are_recorded_with_traceback(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "boom")
    clock.advance(60)
    step(engine)
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.FAILED
    assert (run.error or "").startswith("ValueError: the job failed on purpose")
    assert "Traceback" in (run.error or "") and "jobs_for_tests.py" in (run.error or "")


def test_stored_arguments_reach_declared_parameters_only(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "with_args", arguments={"city": "Oslo", "days": 3, "unused": True})
    add(sqlite_store, "record", arguments={"ignored": 1}, name="record-with-args")
    clock.advance(60)
    step(engine)
    assert sorted(jobs.calls) == ["Oslo:3", "record"]


def test_missing_required_argument_fails_the_run(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "with_args")
    clock.advance(60)
    step(engine)
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.FAILED and "city" in (run.error or "")


def test_unknown_executor_fails_the_run_with_a_clear_error(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "record", executor="carrier-pigeon")
    clock.advance(60)
    step(engine)
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.FAILED and "'carrier-pigeon' is not configured" in (run.error or "")


def test_node_start_clears_claims_it_left_behind(tmp_path: Path, clock: FakeClock) -> None:
    store = SQLiteStore(str(tmp_path / "t.db"), clock=clock)
    store.upgrade()
    store.open()
    add(store, "record")
    clock.advance(60)
    store.claim_due("n1", limit=10, buckets=None)  # then "n1" dies
    config = Config(scheduler=SchedulerConfig(node_id="n1"), store=PluginChoice("sqlite", {}))
    node = Node(config, store=store, clock=clock)
    node.open()
    try:
        assert store.get("record").state is ScheduleState.IDLE
        (run,) = store.history()
        assert run.status is RunStatus.ABANDONED and "restarted" in (run.error or "")
    finally:
        node.shutdown()


def test_sleeping_engine_wakes_on_change_and_stops_gracefully(tmp_path: Path) -> None:
    """Real clock: a node sleeping up to 60 s runs a job triggered by another process's store."""
    path = str(tmp_path / "t.db")
    store = SQLiteStore(path, poll_interval=0.05)
    store.upgrade()
    store.open()
    add(store, "record", "0 0 1 1 *")  # next fire months away
    engine, executor = make_engine(store, None, max_sleep=60.0)
    store.listen(engine.wake)
    thread = threading.Thread(target=engine.run_forever)
    thread.start()
    try:
        time.sleep(0.3)
        other = SQLiteStore(path)
        other.open()
        other.fire_now("record")
        other.close()
        deadline = time.monotonic() + 10
        while not store.history() or store.history()[0].status is RunStatus.RUNNING:
            assert time.monotonic() < deadline, "the sleeping engine was not woken by the change"
            time.sleep(0.05)
        assert jobs.calls == ["record"]
    finally:
        engine.stop()
        thread.join(5)
        executor.shutdown()
        engine.membership.stop()
        store.close()
    assert not thread.is_alive()


def test_failed_runs_are_retried_with_backoff_and_each_attempt_recorded(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    jobs.attempts.clear()
    add(sqlite_store, "fails_twice", "0 * * * *", retries=3, retry_backoff=timedelta(seconds=0.05))
    clock.advance(3600)
    step_until_attempts(engine, 3)
    history = runs(sqlite_store)
    assert [(r.attempt, r.status) for r in history] == [
        (1, RunStatus.FAILED),
        (2, RunStatus.FAILED),
        (3, RunStatus.SUCCEEDED),
    ]
    assert {r.scheduled_for for r in history} == {T0 + timedelta(hours=1)}
    assert "attempt 2 fails" in (history[1].error or "")
    s = sqlite_store.get("fails_twice")
    assert s.state is ScheduleState.IDLE and s.next_fire == T0 + timedelta(hours=2)


def test_a_retry_never_overlaps_the_next_fire(engine: Engine, sqlite_store: SQLStore, clock: FakeClock) -> None:
    add(sqlite_store, "boom", "* * * * * *", retries=5, retry_backoff=timedelta(seconds=2))
    clock.advance(1)
    step(engine)
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.FAILED and run.attempt == 1
    assert sqlite_store.get("boom").state is ScheduleState.IDLE


def test_run_now_while_running_fires_right_after_the_current_run(
    engine: Engine, sqlite_store: SQLStore, clock: FakeClock
) -> None:
    add(sqlite_store, "blocked", "0 0 1 1 *")
    sqlite_store.fire_now("blocked")
    engine.tick()
    assert len(engine.in_flight) == 1
    clock.advance(5)
    sqlite_store.fire_now("blocked")  # arrives while the first run is active
    jobs.gate.set()
    engine.drain(5)
    assert sqlite_store.get("blocked").next_fire == T0 + timedelta(seconds=5)
    step(engine)
    assert jobs.calls == ["blocked", "blocked"]
    assert [r.status for r in runs(sqlite_store)] == [RunStatus.SUCCEEDED, RunStatus.SUCCEEDED]


# -- claiming ahead of the due time (lookahead) ------------------------------------------------------


def test_lookahead_claims_early_and_starts_exactly_on_time(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    # Housekeeping an hour away: it runs on the real monotonic clock, and on a loaded machine a
    # takeover or renewal falling due between the steps made the sleep below 0 (suite, once).
    engine = new_engine(sqlite_store, lookahead=5.0, renew_interval=3600.0, takeover_interval=3600.0)
    add(sqlite_store, "record")  # due at T0 + 60 s
    clock.advance(54.9)
    step(engine)
    assert engine.held == [] and sqlite_store.get("record").state is ScheduleState.IDLE
    clock.advance(3.1)  # 2 s before the due time (claims begin at about half the lookahead)
    step(engine)
    (claim,) = engine.held
    assert claim.early and claim.scheduled_for == T0 + timedelta(minutes=1)
    assert sqlite_store.get("record").state is ScheduleState.RUNNING
    clock.advance(1.999)
    step(engine)
    assert jobs.calls == [] and len(engine.held) == 1
    # Its start recorded ahead (start_lead): it waits for its time, and the loop wakes for that.
    schedule = sqlite_store.get("record")
    assert schedule.state is ScheduleState.RUNNING and schedule.claimed_at == T0 + timedelta(minutes=1)
    assert 0.0 < engine.sleep_seconds() <= 0.001
    clock.advance(0.001)
    step(engine)
    engine.drain(5)
    assert jobs.calls == ["record"] and engine.held == []
    (run,) = runs(sqlite_store)
    assert run.status is RunStatus.SUCCEEDED and run.started_at == T0 + timedelta(minutes=1)
    assert sqlite_store.get("record").next_fire == T0 + timedelta(minutes=2)


def test_with_no_start_lead_a_held_fire_starts_at_its_time_in_a_batch_window(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    # The node's monotonic clock stands still but where the test moves it: the sleep asked
    # below is then exact, whatever the machine's load between the steps and the question.
    ticker = Ticker()
    engine = new_engine(sqlite_store, monotonic=ticker, lookahead=5.0, start_lead=0.0)
    add(sqlite_store, "record")  # due at T0 + 60 s
    clock.advance(58.0)
    step(engine)
    (claim,) = engine.held
    clock.advance(1.999)
    ticker.advance(1.999)
    step(engine)
    assert jobs.calls == [] and engine.held == [claim]
    schedule = sqlite_store.get("record")
    assert schedule.claimed_at is not None and schedule.claimed_at < claim.scheduled_for  # not started
    # Wakes for the due time (a few ms after it: start_batch_window), not max_sleep.
    slack = engine.settings.start_batch_window
    assert 0.001 + slack <= engine.sleep_seconds() <= 0.002 + slack
    clock.advance(0.001)
    ticker.advance(0.001)
    step(engine)
    engine.drain(5)
    assert jobs.calls == ["record"] and engine.held == []


def test_held_claims_count_against_max_in_flight(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sqlite_store, lookahead=10.0, max_in_flight=2)
    for name in ("record", "with_args", "boom"):
        add(sqlite_store, name, arguments={"city": "x"} if name == "with_args" else {})
    clock.advance(56)
    step(engine)
    assert len(engine.held) == 2
    assert sum(s.state is ScheduleState.RUNNING for s in sqlite_store.list_schedules()) == 2


def test_release_held_lets_another_node_run_the_fire_on_time(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    early = new_engine(sqlite_store, lookahead=5.0)
    add(sqlite_store, "record")
    clock.advance(58)
    step(early)
    assert len(early.held) == 1
    assert early.release_held() == 1
    assert early.held == [] and sqlite_store.history() == []
    s = sqlite_store.get("record")
    assert s.state is ScheduleState.IDLE and s.next_fire == T0 + timedelta(minutes=1)
    other = new_engine(sqlite_store, node_id="n2")
    clock.advance(2)
    step(other)
    assert jobs.calls == ["record"]
    (run,) = runs(sqlite_store)
    assert run.node == "n2" and run.status is RunStatus.SUCCEEDED


def test_node_shutdown_gives_back_what_it_claimed_ahead(tmp_path: Path, clock: FakeClock) -> None:
    store = SQLiteStore(str(tmp_path / "t.db"), clock=clock)
    store.upgrade()
    store.open()
    add(store, "record")
    clock.advance(58)
    config = Config(scheduler=SchedulerConfig(node_id="n1", lookahead=5.0), store=PluginChoice("sqlite", {}))
    node = Node(config, store=store, clock=clock)
    node.open()
    try:
        node.engine.tick()
        assert len(node.engine.held) == 1
    finally:
        node.shutdown()
    store.open()  # the node closed it
    s = store.get("record")
    assert s.state is ScheduleState.IDLE and s.next_fire == T0 + timedelta(minutes=1)
    assert store.history() == [] and jobs.calls == []
    store.close()


def test_claims_ahead_once_a_fire_is_within_half_the_lookahead(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    """Wake-ups in between (runs ending) do not claim one fire at a time."""
    engine = new_engine(sqlite_store, lookahead=1.0)
    add(sqlite_store, "record")  # due at T0 + 60 s
    engine.tick()
    clock.advance(59.2)
    # Wakes about half the lookahead before the due time (0.48-0.5 s, drawn per claim).
    assert 0.3 <= engine.sleep_seconds() <= 0.32
    engine.tick()
    assert engine.held == [] and sqlite_store.get("record").state is ScheduleState.IDLE
    clock.advance(0.32)
    engine.tick()
    assert [c.spec.name for c in engine.held] == ["record"]


def test_a_node_unsure_of_its_membership_does_not_start_held_fires(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    membership = SwitchableMembership()
    engine = new_engine(sqlite_store, membership=membership, lookahead=5.0)
    add(sqlite_store, "record")
    clock.advance(58)
    step(engine)
    assert len(engine.held) == 1
    membership.ok = False
    clock.advance(2)
    step(engine)
    assert jobs.calls == [] and len(engine.held) == 1
    # Re-checks, without spinning on the due fire (the takeover, every takeover_interval, may
    # come first while fires are held).
    assert 0.1 <= engine.sleep_seconds() <= 0.5
    membership.ok = True
    step(engine)
    engine.drain(5)
    assert jobs.calls == ["record"]


def test_every_attempt_of_a_fire_claimed_ahead_records_its_start(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    jobs.attempts.clear()
    engine = new_engine(sqlite_store, lookahead=5.0)
    add(sqlite_store, "fails_twice", "0 * * * *", retries=3, retry_backoff=timedelta(seconds=0.05))
    clock.advance(3598)
    step(engine)
    assert len(engine.held) == 1
    clock.advance(2)
    step_until_attempts(engine, 3)
    history = runs(sqlite_store)
    assert [(r.attempt, r.status) for r in history] == [
        (1, RunStatus.FAILED),
        (2, RunStatus.FAILED),
        (3, RunStatus.SUCCEEDED),
    ]
    assert all(r.started_at == T0 + timedelta(hours=1) for r in history)


def test_held_fires_stay_held_when_they_cannot_be_given_back(
    tmp_path: Path, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    store = SQLiteStore(str(tmp_path / "t.db"), clock=clock)
    store.upgrade()
    store.open()
    engine = new_engine(store, lookahead=5.0)
    add(store, "record")
    clock.advance(58)
    step(engine)
    store.close()  # the database is gone
    with pytest.raises(StoreError):
        engine.release_held()
    assert len(engine.held) == 1  # still ours: the node releases them with its other claims
    store.open()
    assert engine.release_held() == 1 and engine.held == []
    store.close()


def test_the_claim_lead_is_drawn_anew_after_each_drained_claim(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sqlite_store, lookahead=2.0)
    add(sqlite_store, "record")  # due at T0 + 60 s
    clock.advance(59.5)
    leads = set()
    for _ in range(20):
        leads.add(engine.gate.claim_lead)
        engine.tick()  # the first claim drains the window: a new lead is drawn
    assert all(0.96 <= lead <= 1.0 for lead in leads) and len(leads) > 1


def test_an_idle_owner_looks_again_soon_only_while_fires_are_held_elsewhere(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    ticker = Ticker()
    mine = new_engine(sqlite_store, monotonic=ticker, lookahead=1.0, max_sleep=60.0)
    other = new_engine(sqlite_store, lookahead=1.0, node_id="n2")
    mine.tick()
    assert mine.sleep_seconds() == pytest.approx(0.25)  # just started: others may hold all
    ticker.advance(60)
    assert mine.sleep_seconds() > 30  # nothing scheduled for a minute: no polling
    add(sqlite_store, "record")  # due at T0 + 60 s
    mine.wake()  # what the store's change notification does
    assert mine.sleep_seconds() == pytest.approx(60 - mine.gate.claim_lead)
    clock.advance(59.6)
    other.tick()  # the other owner claims it ahead (claims are not notified)
    assert len(other.held) == 1
    ticker.advance(1)  # the next due time read before is now too old to trust
    assert mine.sleep_seconds() == pytest.approx(0.25)  # its end is not notified: look again


def test_the_next_due_time_is_read_again_only_after_a_change_or_when_old(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sqlite_store, lookahead=0.0)
    add(sqlite_store, "record")  # due at T0 + 60 s
    engine.tick()
    assert engine.sleep_seconds() == pytest.approx(60)
    add(sqlite_store, "with_args", "*/15 * * * * *", arguments={"city": "x"})  # due at T0 + 15 s
    assert engine.sleep_seconds() == pytest.approx(60)  # not notified yet, and fresh
    engine.wake()
    assert engine.sleep_seconds() == pytest.approx(15)
    clock.advance(15)
    engine.tick()  # claims and starts with_args
    engine.sleep_seconds()  # reads again after the claim: record, at T0 + 60 s
    assert engine.gate.next_due == T0 + timedelta(seconds=60)
    reads = engine.gate.reads
    engine.drain(5)  # with_args ends, due again at T0 + 30 s: folded in without a read
    assert engine.gate.next_due == T0 + timedelta(seconds=30)
    engine.sleep_seconds()
    assert engine.gate.reads == reads


class _OwnsNothing(SingleMembership):
    """A ring member that owns no bucket: every fire is another node's."""

    def owned_buckets(self) -> list[int]:
        return []


def test_a_node_takes_another_bucket_s_fire_once_overdue_by_steal_after_without_spinning(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    ticker = Ticker()
    engine = new_engine(
        sqlite_store, membership=_OwnsNothing(), monotonic=ticker, lookahead=1.0, steal_after=0.5, max_sleep=3600.0
    )
    add(sqlite_store, "record")  # due at T0 + 60 s, in a bucket this node does not own
    engine.tick()
    ticker.advance(61)  # past the start-up's busy polling
    assert engine.sleep_seconds() > 60  # not due yet: its owners claim it, nothing to wait for
    clock.advance(60.2)  # due, and still idle: its owners are behind
    ticker.advance(1)  # the next due time read before is too old to trust
    reads = engine.gate.reads
    for _ in range(5):  # one claim (ahead, empty) at most; then the gate waits for the time itself
        engine.tick()
        engine.sleep_seconds()
    assert jobs.calls == [] and runs(sqlite_store) == []
    assert 1 <= engine.gate.reads - reads <= 3
    assert engine.sleep_seconds() == pytest.approx(0.3, abs=0.0001)
    clock.advance(0.3)
    step(engine)
    assert jobs.calls == ["record"]
    assert [(r.status, r.node) for r in runs(sqlite_store)] == [(RunStatus.SUCCEEDED, "n1")]


def test_without_steal_after_a_node_leaves_other_buckets_alone(
    sqlite_store: SQLStore, clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    engine = new_engine(sqlite_store, membership=_OwnsNothing(), lookahead=1.0, steal_after=86400.0)
    add(sqlite_store, "record")
    clock.advance(120)
    step(engine)
    assert jobs.calls == [] and runs(sqlite_store) == []
