"""The part of :class:`~tickwork.testing.StoreContract` about reruns of fires abandoned with
their node (``on_abandon = "rerun"``, :meth:`tickwork.abc.Store.start_rerun`): only the claim's
holder opens the next attempt, once; refusals (grace, retry budget) are noted on the abandoned row."""

from __future__ import annotations

from datetime import timedelta

from ..abc import Store
from ..structures import Claim, Finish, OnAbandon, Outcome, RunStatus, ScheduleSpec

HOUR = 3600.0
HOUR_DELTA = timedelta(hours=1)


def _spec(name: str) -> ScheduleSpec:
    return ScheduleSpec(
        name=name, trigger_kind="cron", expression="0 3 * * *", target="m:f", on_abandon=OnAbandon.RERUN
    )


def _claim(store: Store, node: str, name: str) -> Claim:
    [claim] = [c for c in store.claim_due(node, limit=1000, buckets=None) if c.spec.name == name]
    return claim


def _abandoned_by(store: Store, node: str, name: str) -> Claim:
    """``name`` claimed and started by ``node``, the node then declared dead; the fire's claim
    by another node (``n9``), which finds the fire in the history (no run id)."""
    first = _claim(store, node, name)
    assert first.run_id is not None
    assert store.release_node(node, f"node {node} is dead") == 1
    again = _claim(store, "n9", name)
    assert again.run_id is None and again.scheduled_for == first.scheduled_for
    assert again.spec.on_abandon is OnAbandon.RERUN  # stored and claimed as given, as the member
    return again


class RerunContract:
    """Mixed into :class:`~tickwork.testing.StoreContract` (which provides the ``store`` fixture)."""

    def test_an_abandoned_fire_is_rerun_once_by_its_claim_holder(self, store: Store) -> None:
        store.add(_spec("r"), store.now())
        claim = _abandoned_by(store, "n1", "r")
        # Not this node's claim: nothing opened.
        assert store.start_rerun("n2", claim, grace=HOUR, max_attempt=2) is None
        rerun = store.start_rerun("n9", claim, grace=HOUR, max_attempt=2)
        assert rerun is not None and rerun.run_id is not None
        assert (rerun.attempt, rerun.scheduled_for, rerun.claim_seq) == (2, claim.scheduled_for, claim.claim_seq)
        # Asked again (an answer lost): the same attempt, not a third.
        again = store.start_rerun("n9", claim, grace=HOUR, max_attempt=2)
        assert again is not None and (again.attempt, again.run_id) == (2, rerun.run_id)
        history = sorted(store.history(schedule="r"), key=lambda r: r.attempt)
        assert [(r.attempt, r.status, r.node) for r in history] == [
            (1, RunStatus.ABANDONED, "n1"),
            (2, RunStatus.RUNNING, "n9"),
        ]
        assert history[1].started_at is not None and history[1].scheduled_for == claim.scheduled_for
        ended = Finish(rerun, Outcome(RunStatus.SUCCEEDED), claim.scheduled_for + HOUR_DELTA)
        assert store.finish("n9", [ended]) == [True]
        assert [r.status for r in sorted(store.history(schedule="r"), key=lambda r: r.attempt)] == [
            RunStatus.ABANDONED,
            RunStatus.SUCCEEDED,
        ]

    def test_a_rerun_abandoned_again_is_refused_past_the_retry_budget(self, store: Store) -> None:
        store.add(_spec("r"), store.now())
        claim = _abandoned_by(store, "n1", "r")
        assert store.start_rerun("n9", claim, grace=HOUR, max_attempt=2) is not None
        # The rerunning node dies too: attempt 2 is abandoned, and 2 attempts were all it had.
        assert store.release_node("n9", "node n9 is dead") == 1
        third = _claim(store, "n8", "r")
        assert third.run_id is None
        assert store.start_rerun("n8", third, grace=HOUR, max_attempt=2) is None
        last = max(store.history(schedule="r"), key=lambda r: r.attempt)
        assert last.attempt == 2 and last.status is RunStatus.ABANDONED
        assert last.error is not None and last.error.startswith("node n9 is dead; not rerun: attempt 2 was the last")

    def test_a_fire_past_its_grace_stays_abandoned_with_the_reason(self, store: Store) -> None:
        store.add(_spec("late"), store.now() - timedelta(seconds=10))
        claim = _abandoned_by(store, "n1", "late")
        assert store.start_rerun("n9", claim, grace=1.0, max_attempt=2) is None
        [row] = store.history(schedule="late")
        assert row.status is RunStatus.ABANDONED and row.error is not None
        assert row.error.startswith("node n1 is dead; not rerun: ")
        assert row.error.endswith("past its fire time, beyond its misfire grace of 1s")

    def test_only_an_abandoned_fire_is_rerun(self, store: Store) -> None:
        store.add(_spec("done"), store.now())
        first = _claim(store, "n1", "done")
        # Its end lands but leaves the schedule at the same fire (a finish whose next fire is
        # the same time), so the fire is claimed again with its run recorded: not abandoned.
        assert store.finish("n1", [Finish(first, Outcome(RunStatus.SUCCEEDED), first.scheduled_for)]) == [True]
        again = _claim(store, "n2", "done")
        assert again.run_id is None
        assert store.start_rerun("n2", again, grace=HOUR, max_attempt=2) is None
        assert [r.status for r in store.history(schedule="done")] == [RunStatus.SUCCEEDED]
