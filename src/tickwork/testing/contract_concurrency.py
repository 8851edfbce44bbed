"""The part of :class:`~tickwork.testing.StoreContract` about concurrent runs: the admission of a
claimed fire under ``max_concurrent`` and a concurrency key, the release of an ``allow``
schedule as its run starts, and the ends of runs that outlived their claim
(docs/claim-protocol.md#concurrent-runs)."""

from __future__ import annotations

from datetime import timedelta

from ..abc import Store
from ..structures import (
    ADMISSION_FENCED,
    Admission,
    Claim,
    Finish,
    Outcome,
    RunRecord,
    RunStatus,
    ScheduleSpec,
    ScheduleState,
)

MINUTE = timedelta(minutes=1)
OK = Outcome(RunStatus.SUCCEEDED)


def _spec(name: str, **fields: object) -> ScheduleSpec:
    values: dict[str, object] = {"name": name, "trigger_kind": "cron", "expression": "* * * * *", "target": "m:f"}
    values.update(fields)
    return ScheduleSpec(**values)  # type: ignore[arg-type]


def _claim(store: Store, name: str, node: str = "n1") -> Claim:
    """Make ``name`` due now and claim it on ``node``."""
    store.fire_now(name)
    [claim] = [c for c in store.claim_due(node, limit=1000, buckets=None) if c.spec.name == name]
    assert claim.run_id is not None
    return claim


def _released(claim: Claim, store: Store) -> Admission:
    """The admission of an ``allow`` fire, releasing its schedule with the next fire a minute on."""
    return Admission(claim, release=True, next_fire=store.now() + MINUTE)


def _statuses(store: Store, name: str) -> list[RunStatus]:
    return sorted((r.status for r in store.history(schedule=name, limit=100)), key=lambda s: s.value)


class ConcurrencyContract:
    """Mixed into :class:`~tickwork.testing.StoreContract` (which provides the ``store`` fixture)."""

    def test_the_concurrency_options_are_stored_and_claimed_as_given(self, store: Store) -> None:
        allow = _spec("allow", overlap="allow", max_concurrent=3, concurrency_key="billing", concurrency_limit=2)
        keyed = _spec("keyed", concurrency_key="billing")
        store.add(allow, store.now())
        store.add(keyed, store.now())
        assert store.get("allow").spec == allow
        assert store.get("keyed").spec == keyed
        claimed = {c.spec.name: c.spec for c in store.claim_due("n1", limit=1000, buckets=None)}
        assert claimed == {"allow": allow, "keyed": keyed}

    def test_an_allow_schedule_is_released_as_its_run_starts_up_to_max_concurrent(self, store: Store) -> None:
        store.add(_spec("a", overlap="allow", max_concurrent=2), None)
        first = _claim(store, "a")
        assert store.admit("n1", _released(first, store)) is None
        # Asked again (an answer lost after the commit): admitted already, nothing changes.
        assert store.admit("n1", _released(first, store)) is None
        schedule = store.get("a")
        # Idle with its next fire while the first run goes on: the next fire can be claimed.
        assert schedule.state is ScheduleState.IDLE and schedule.next_fire is not None
        assert _statuses(store, "a") == [RunStatus.RUNNING]
        second = _claim(store, "a", "n2")
        assert store.admit("n2", _released(second, store)) is None
        third = _claim(store, "a")
        assert store.admit("n1", _released(third, store)) == "max_concurrent 2 reached"
        # Refused: the claim is still held, and its end records why the fire did not run.
        assert store.get("a").state is ScheduleState.RUNNING
        skipped = Outcome(RunStatus.SKIPPED, error="max_concurrent 2 reached")
        assert store.finish("n1", [Finish(third, skipped, store.now() + MINUTE)]) == [True]
        # A run's end frees its place; another node's end of it changes nothing.
        assert store.end_detached("n2", [Finish(first, OK, None)]) == [False]
        assert store.end_detached("n1", [Finish(first, OK, None)]) == [True]
        fourth = _claim(store, "a")
        assert store.admit("n1", _released(fourth, store)) is None
        runs: dict[int | None, RunRecord] = {r.id: r for r in store.history(schedule="a", limit=100)}
        assert runs[first.run_id].status is RunStatus.SUCCEEDED and runs[first.run_id].finished_at is not None
        assert runs[third.run_id].status is RunStatus.SKIPPED
        assert runs[third.run_id].error == "max_concurrent 2 reached"
        assert [runs[c.run_id].status for c in (second, fourth)] == [RunStatus.RUNNING] * 2

    def test_a_concurrency_key_bounds_the_runs_of_every_schedule_carrying_it(self, store: Store) -> None:
        store.add(_spec("k1", concurrency_key="billing"), None)
        store.add(_spec("k2", concurrency_key="billing", overlap="allow"), None)
        store.add(_spec("other", concurrency_key="reports"), None)
        one = _claim(store, "k1")
        two = _claim(store, "k2", "n2")
        assert store.admit("n1", Admission(one, release=False)) is None
        assert store.admit("n2", _released(two, store)) == "concurrency key billing at its limit 1"
        # Another key is counted on its own.
        other = _claim(store, "other", "n2")
        assert store.admit("n2", Admission(other, release=False)) is None
        # A skip schedule's admitted run ends through the fenced release and frees the key.
        assert store.finish("n1", [Finish(one, OK, store.now() + MINUTE)]) == [True]
        assert store.admit("n2", _released(two, store)) is None
        assert store.get("k2").state is ScheduleState.IDLE

    def test_a_fire_whose_claim_was_lost_is_not_admitted(self, store: Store) -> None:
        store.add(_spec("a", overlap="allow", max_concurrent=1), None)
        claim = _claim(store, "a")
        assert store.admit("n2", _released(claim, store)) == ADMISSION_FENCED  # not n2's claim
        assert store.unclaim("n1", [claim]) == 1
        assert store.admit("n1", _released(claim, store)) == ADMISSION_FENCED

    def test_a_dead_nodes_runs_stop_counting_and_their_late_end_is_only_noted(self, store: Store) -> None:
        store.add(_spec("a", overlap="allow", max_concurrent=1), None)
        first = _claim(store, "a")
        assert store.admit("n1", _released(first, store)) is None
        blocked = _claim(store, "a", "n2")
        assert store.admit("n2", _released(blocked, store)) == "max_concurrent 1 reached"
        skipped = Outcome(RunStatus.SKIPPED, error="max_concurrent 1 reached")
        assert store.finish("n2", [Finish(blocked, skipped, store.now() + MINUTE)]) == [True]
        store.release_node("n1", "node n1 died")
        after = _claim(store, "a", "n2")
        assert store.admit("n2", _released(after, store)) is None
        assert store.end_detached("n1", [Finish(first, OK, None)]) == [False]
        [run] = [r for r in store.history(schedule="a", limit=100) if r.id == first.run_id]
        assert run.status is RunStatus.ABANDONED
        assert run.error is not None and run.error.startswith("node n1 died")
        assert "finished (succeeded) after its end was recorded" in run.error

    def test_the_release_at_start_records_the_fires_passed_over(self, store: Store) -> None:
        store.add(_spec("a", overlap="allow"), None)
        claim = _claim(store, "a")
        passed = claim.scheduled_for - timedelta(seconds=30)
        admission = Admission(
            claim, release=True, next_fire=store.now() + MINUTE, skipped=((passed, "missed: no node ran it in time"),)
        )
        assert store.admit("n1", admission) is None
        [skipped] = [r for r in store.history(schedule="a", limit=100) if r.status is RunStatus.SKIPPED]
        assert (skipped.scheduled_for, skipped.error) == (passed, "missed: no node ran it in time")
        # No bound: any number of runs at once.
        for node in ("n2", "n3"):
            again = _claim(store, "a", node)
            assert store.admit(node, _released(again, store)) is None
        assert _statuses(store, "a").count(RunStatus.RUNNING) == 3
