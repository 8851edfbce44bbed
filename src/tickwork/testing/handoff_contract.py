"""The hand-off part of the store contract (:class:`tickwork.testing.StoreContract` includes it):
:meth:`~tickwork.abc.Store.report_handoff` and :meth:`~tickwork.abc.Store.pending_handoff`.

Both are optional members of the Store interface: a store without them passes by refusing both
with :class:`~tickwork.errors.TickworkError` (the default), which is then what is checked."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ..abc import Store
from ..errors import TickworkError
from ..structures import Finish, Outcome, RunStatus, ScheduleSpec

_WAITING = frozenset({RunStatus.SUBMITTED, RunStatus.ABANDONED})


def _hand_off(store: Store, name: str) -> int:
    """Add ``name``, claim its fire and end the claim as a hand-off; the run's id."""
    store.add(ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target="m:f"), store.now())
    (claim,) = store.claim_due("n1", limit=1, buckets=None)
    assert claim.run_id is not None
    later = store.now() + timedelta(minutes=1)
    assert store.finish("n1", [Finish(claim, Outcome(RunStatus.SUBMITTED), later)]) == [True]
    return claim.run_id


def _supports_handoffs(store: Store) -> bool:
    """False for a store that refuses hand-offs, after checking it refuses both methods."""
    try:
        store.pending_handoff("no-such-schedule", 60)
    except TickworkError:
        with pytest.raises(TickworkError):
            store.report_handoff(1, RunStatus.STARTED, expect=_WAITING)
        return False
    return True


class HandoffContract:
    """Runs handed off to another system's queue, reported on by its workers."""

    def test_worker_reports_move_a_handoff_once_each(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        run_id = _hand_off(store, "a")
        pending = store.pending_handoff("a", 3600)
        assert pending is not None and pending.id == run_id and pending.status is RunStatus.SUBMITTED
        assert store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING) == (True, RunStatus.STARTED)
        (run,) = store.history(schedule="a")
        assert run.status is RunStatus.STARTED and run.started_at is not None and run.finished_at is None
        # A second delivery of the same message finds the run started: it must not run again.
        assert store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING) == (False, RunStatus.STARTED)
        landed = store.report_handoff(run_id, RunStatus.FAILED, expect={RunStatus.STARTED}, error="Traceback: boom")
        assert landed == (True, RunStatus.FAILED)
        (run,) = store.history(schedule="a")
        assert run.status is RunStatus.FAILED and run.error == "Traceback: boom" and run.finished_at is not None
        assert store.pending_handoff("a", 3600) is None
        assert store.report_handoff(run_id + 1000, RunStatus.STARTED, expect=_WAITING) == (False, None)

    def test_a_report_before_the_node_recorded_the_handoff_does_not_land(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        store.add(ScheduleSpec(name="b", trigger_kind="cron", expression="* * * * *", target="m:f"), store.now())
        (claim,) = store.claim_due("n1", limit=1, buckets=None)
        assert claim.run_id is not None
        assert store.report_handoff(claim.run_id, RunStatus.STARTED, expect=_WAITING) == (False, RunStatus.RUNNING)
        assert store.pending_handoff("b", 3600) is None  # a claim in progress is not a hand-off yet

    def test_a_handoff_without_report_times_out(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        run_id = _hand_off(store, "c")
        assert store.pending_handoff("c", 3600) is not None
        # A negative timeout puts the deadline before the hand-off: it is overdue at once.
        assert store.pending_handoff("c", -5) is None
        (run,) = store.history(schedule="c")
        assert run.id == run_id and run.status is RunStatus.TIMED_OUT and "report_timeout" in (run.error or "")
        # A worker reporting after that is fenced out.
        assert store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING) == (False, RunStatus.TIMED_OUT)
