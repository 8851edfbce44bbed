"""The SQL stores' fault-containment contract (park, reconcile, retimed bulk writes, appended
fenced-out notes, pruning that keeps fencing rows, node identity, dead-node judgement), on every
backend and claim strategy, on a fake clock (docs/architecture.md#faults)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.support.stores import STORE_PARAMS, T0, make_store
from tickwork.sql.store import SQLStore
from tickwork.structures import Claim, Fault, Finish, Outcome, RunStatus, ScheduleSpec, ScheduleState
from tickwork.testing import FakeClock

OK = Outcome(RunStatus.SUCCEEDED)


@pytest.fixture(params=STORE_PARAMS)
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[SQLStore]:
    """Each SQL store x claim strategy on a fake clock (the in-memory store does not model these
    fault rules yet)."""
    s = make_store(*request.param, request, tmp_path, clock=clock)
    assert isinstance(s, SQLStore)
    yield s
    s.close()


def spec(name: str = "job", **kw: object) -> ScheduleSpec:
    values: dict[str, object] = {
        "name": name,
        "trigger_kind": "cron",
        "expression": "* * * * *",
        "target": "mod:func",
    }
    values.update(kw)
    return ScheduleSpec(**values)  # type: ignore[arg-type]


def claim_all(store: SQLStore, node: str = "n1", buckets: list[int] | None = None) -> list[Claim]:
    return store.claim_due(node, limit=1000, buckets=buckets)


def finish(store: SQLStore, claim: Claim, next_fire: datetime | None, node: str = "n1", **kw: object) -> bool:
    outcome = kw.pop("outcome", OK)
    return store.finish(node, [Finish(claim, outcome, next_fire, **kw)])[0]  # type: ignore[arg-type]


# -- faults contained (docs/architecture.md#faults) ---------------------------------------------------


def test_a_fenced_out_end_appends_to_the_recorded_reason(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a", timeout=timedelta(seconds=10)), T0)
    (c,) = claim_all(store)
    clock.advance(16)
    assert store.reap_expired(5) == 1
    assert not finish(store, c, T0 + timedelta(minutes=1), outcome=Outcome(RunStatus.FAILED, error="late boom"))
    (run,) = store.history()
    assert run.status is RunStatus.TIMED_OUT
    assert (run.error or "").startswith("hard timeout: claim not ended within timeout + 5s grace\n")
    assert "finished (failed) after its claim was taken over: late boom" in (run.error or "")


def test_pruning_keeps_the_row_that_fences_an_abandoned_fire(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    claim_all(store)
    store.release_node("n1", "n1 died")  # released, still due at T0: its row fences that fire
    clock.set(T0 + timedelta(days=40))
    assert store.prune_history(timedelta(days=30)) == 0
    (again,) = claim_all(store)
    assert again.scheduled_for == T0 and again.run_id is None  # not run a second time


def test_park_is_fenced_and_stops_the_schedule(store: SQLStore) -> None:
    store.add(spec("a"), T0)
    store.add(spec("b"), T0)
    ca, cb = claim_all(store)
    failed = Outcome(RunStatus.FAILED, error="not run: TriggerError: bad zone (schedule parked)")
    stale = Claim(cb.schedule_id, cb.spec, cb.scheduled_for, cb.claim_seq + 1, cb.claimed_at, cb.run_id)
    assert store.park(
        "n1", [(Finish(ca, failed, None), Fault("TriggerError: bad zone")), (Finish(stale, OK, None), Fault("x"))]
    ) == [
        True,
        False,
    ]
    a = store.get("a")
    assert (a.state, a.next_fire, a.fault) == (ScheduleState.IDLE, None, "TriggerError: bad zone")
    assert store.get("b").state is ScheduleState.RUNNING and store.get("b").fault is None
    assert {r.schedule: r.status for r in store.history()} == {"a": RunStatus.FAILED, "b": RunStatus.RUNNING}
    assert store.set_enabled("a", True, T0 + timedelta(minutes=1)).fault is None


def test_release_untracked_keeps_what_the_node_tracks(store: SQLStore) -> None:
    for name in ("a", "b", "c"):
        store.add(spec(name), T0)
    ca, cb = store.claim_due("n1", limit=2, buckets=None)
    (_c,) = claim_all(store, "n2")
    assert store.release_untracked("n1", [ca], "lost") == 1
    assert store.release_untracked("n1", [ca], "lost") == 0
    states = {s.name: s.state for s in store.list_schedules()}
    assert states == {ca.spec.name: ScheduleState.RUNNING, cb.spec.name: ScheduleState.IDLE, "c": ScheduleState.RUNNING}
    by_name = {r.schedule: r for r in store.history()}
    assert by_name[cb.spec.name].status is RunStatus.ABANDONED and by_name[cb.spec.name].error == "lost"
    assert by_name[ca.spec.name].status is RunStatus.RUNNING and by_name["c"].status is RunStatus.RUNNING


def test_start_attempt_is_idempotent_under_its_claim(store: SQLStore) -> None:
    store.add(spec("a", retries=2), T0)
    (c,) = claim_all(store)
    store.end_attempt(c, Outcome(RunStatus.FAILED, error="x"))
    retry = Claim(c.schedule_id, c.spec, c.scheduled_for, c.claim_seq, c.claimed_at, None, attempt=2)
    first = store.start_attempt("n1", retry)
    assert first is not None and store.start_attempt("n1", retry) == first  # an answer lost, asked again
    store.release_node("n1", "gone")
    assert store.start_attempt("n1", retry) is None


def test_register_node_refuses_a_live_namesake(store: SQLStore, clock: FakeClock) -> None:
    assert store.register_node("n1", "proc-a", 4.0) is None
    assert store.register_node("n1", "proc-a", 4.0) is None  # the same process again
    live = store.register_node("n1", "proc-b", 4.0)
    assert live is not None and live.id == "n1"
    clock.advance(5)  # proc-a stopped beating
    assert store.register_node("n1", "proc-b", 4.0) is None


def test_a_dead_node_is_released_only_if_still_dead_when_judged(store: SQLStore, clock: FakeClock) -> None:
    store.add(spec("a"), T0)
    store.heartbeat("n1")
    claim_all(store, "n1")
    clock.advance(5)
    store.heartbeat("n1")  # beat after it was read as stale
    assert store.release_dead_node("n1", 4.0, "dead") is None
    assert store.get("a").state is ScheduleState.RUNNING
    clock.advance(5)
    assert store.release_dead_node("n1", 4.0, "dead") == 1
    assert store.get("a").state is ScheduleState.IDLE and store.nodes() == []
    (run,) = store.history()
    assert run.status is RunStatus.ABANDONED and run.error == "dead"


def test_a_bulk_write_clears_the_fault_and_marks_a_running_retrigger_retimed(store: SQLStore, clock: FakeClock) -> None:
    # The batched path of write_schedules (deployment sync) keeps update()'s fault rules.
    from tickwork.structures import SchedulePlan

    store.add(spec("a"), T0)
    store.add(spec("b"), T0)
    store.add(spec("p"), T0)
    ca, cb, cp = sorted(claim_all(store), key=lambda c: c.spec.name)
    assert store.park("n1", [(Finish(cp, OK, None), Fault("TriggerError: bad zone"))]) == [True]
    assert store.get("p").fault == "TriggerError: bad zone"
    plan = SchedulePlan(
        update=(spec("b", target="mod:other"),),
        retrigger=(spec("a", expression="0 * * * *"), spec("p", expression="0 * * * *")),
    )
    store.write_schedules(lambda stored: plan, lambda s, now: T0 + timedelta(hours=1))
    parked = store.get("p")
    assert parked.fault is None and parked.next_fire == T0 + timedelta(hours=1)
    assert finish(store, ca, T0 + timedelta(minutes=1)) and finish(store, cb, T0 + timedelta(minutes=1))
    assert store.get("a").next_fire == T0 + timedelta(hours=1)  # retimed: the sync's fire wins
    assert store.get("b").next_fire == T0 + timedelta(minutes=1)  # same trigger: the run's wins
