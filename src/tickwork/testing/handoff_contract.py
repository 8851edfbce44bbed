"""The hand-off part of the store contract (:class:`tickwork.testing.StoreContract` includes it):
:meth:`~tickwork.abc.Store.report_handoff`, :meth:`~tickwork.abc.Store.pending_handoffs`,
:meth:`~tickwork.abc.Store.mark_stuck_handoffs` and :meth:`~tickwork.abc.Store.release_handoffs`.

Both are optional members of the Store interface: a store without them passes by refusing both
with :class:`~tickwork.errors.TickworkError` (the default), which is then what is checked."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ..abc import Store
from ..errors import ScheduleNotFoundError, TickworkError
from ..structures import (
    DEFAULT_NAMESPACE,
    HANDOFF_STUCK,
    Finish,
    Outcome,
    RunStatus,
    ScheduleKey,
    ScheduleSpec,
    handoff_stuck,
)

_WAITING = frozenset({RunStatus.SUBMITTED, RunStatus.ABANDONED})


def _k(name: str) -> ScheduleKey:
    """The key of schedule ``name`` in the default namespace."""
    return (DEFAULT_NAMESPACE, name)


def _hand_off(store: Store, name: str, executor: str = "local") -> int:
    """Add ``name``, claim its fire and end the claim as a hand-off; the run's id."""
    spec = ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target="m:f", executor=executor)
    store.add(spec, store.now())
    (claim,) = store.claim_due("n1", limit=1, buckets=None)
    assert claim.run_id is not None
    later = store.now() + timedelta(minutes=1)
    assert store.finish("n1", [Finish(claim, Outcome(RunStatus.SUBMITTED), later)]) == [True]
    return claim.run_id


def _supports_handoffs(store: Store) -> bool:
    """False for a store that refuses hand-offs, after checking it refuses both methods."""
    try:
        store.pending_handoffs([_k("no-such-schedule")], 60).get(_k("no-such-schedule"))
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
        pending = store.pending_handoffs([_k("a")], 3600).get(_k("a"))
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
        assert store.pending_handoffs([_k("a")], 3600).get(_k("a")) is None
        assert store.report_handoff(run_id + 1000, RunStatus.STARTED, expect=_WAITING) == (False, None)

    def test_a_report_before_the_node_recorded_the_handoff_does_not_land(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        store.add(ScheduleSpec(name="b", trigger_kind="cron", expression="* * * * *", target="m:f"), store.now())
        (claim,) = store.claim_due("n1", limit=1, buckets=None)
        assert claim.run_id is not None
        assert store.report_handoff(claim.run_id, RunStatus.STARTED, expect=_WAITING) == (False, RunStatus.RUNNING)
        assert store.pending_handoffs([_k("b")], 3600).get(_k("b")) is None  # a claim in progress is not a hand-off yet

    def test_the_pending_handoffs_of_many_schedules_are_read_at_once(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        first = _hand_off(store, "m1")
        second = _hand_off(store, "m2")
        store.add(ScheduleSpec(name="m3", trigger_kind="cron", expression="* * * * *", target="m:f"), store.now())
        found = store.pending_handoffs([_k("m1"), _k("m2"), _k("m3"), _k("no-such-schedule"), _k("m1")], 3600)
        # One entry per schedule with a pending hand-off: m3 has none, the unknown name is absent.
        assert {key: run.id for key, run in found.items()} == {_k("m1"): first, _k("m2"): second}
        assert all(run.status is RunStatus.SUBMITTED for run in found.values())
        assert store.report_handoff(first, RunStatus.SUCCEEDED, expect=_WAITING) == (True, RunStatus.SUCCEEDED)
        assert set(store.pending_handoffs([_k("m1"), _k("m2")], 3600)) == {_k("m2")}
        # An overdue one ends timed_out in the same call, whichever schedules are asked with it.
        assert store.pending_handoffs([_k("m2"), _k("m3")], -5) == {}
        (run,) = store.history(schedule="m2")
        assert run.status is RunStatus.TIMED_OUT
        assert store.pending_handoffs([], 3600) == {}

    def test_a_handoff_without_report_times_out(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        run_id = _hand_off(store, "c")
        assert store.pending_handoffs([_k("c")], 3600).get(_k("c")) is not None
        # A negative timeout puts the deadline before the hand-off: it is overdue at once.
        assert store.pending_handoffs([_k("c")], -5).get(_k("c")) is None
        (run,) = store.history(schedule="c")
        assert run.id == run_id and run.status is RunStatus.TIMED_OUT and "report_timeout" in (run.error or "")
        # A worker reporting after that is fenced out.
        assert store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING) == (False, RunStatus.TIMED_OUT)

    def test_a_handoff_not_picked_up_is_marked_stuck_once(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        run_id = _hand_off(store, "d", executor="queue")
        other = _hand_off(store, "e", executor="elsewhere")
        note = f"{HANDOFF_STUCK}nobody took it"
        assert store.mark_stuck_handoffs("queue", 3600, note) == []  # within the pickup window
        # A negative timeout puts the deadline before the hand-off (the database clock decides).
        (marked,) = store.mark_stuck_handoffs("queue", -5, note)
        assert marked.id == run_id and marked.schedule == "d" and marked.status is RunStatus.SUBMITTED
        assert handoff_stuck(marked.status, marked.error)
        # Marked once: a second look (another node's) marks nothing, so nothing is logged twice.
        assert store.mark_stuck_handoffs("queue", -5, note) == []
        (run,) = store.history(schedule="e")
        assert run.id == other and run.error is None  # another executor's hand-off is not its to mark
        # The run is still the schedule's pending hand-off, and a late worker still starts it,
        # which clears the mark.
        pending = store.pending_handoffs([_k("d")], 3600).get(_k("d"))
        assert pending is not None and pending.id == run_id
        assert store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING) == (True, RunStatus.STARTED)
        (run,) = store.history(schedule="d")
        assert not handoff_stuck(run.status, run.error) and run.error is None

    def test_a_released_handoff_ends_and_a_late_worker_is_fenced_out(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        run_id = _hand_off(store, "f")
        (released,) = store.release_handoffs("f", "released by alice")
        assert released.id == run_id and released.status is RunStatus.CANCELLED
        (run,) = store.history(schedule="f")
        assert run.status is RunStatus.CANCELLED and run.error == "released by alice" and run.finished_at is not None
        assert store.pending_handoffs([_k("f")], 3600).get(_k("f")) is None  # the next fire is handed off again
        # The worker that takes the message afterwards must not run it, nor change the row.
        assert store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING) == (False, RunStatus.CANCELLED)
        assert store.release_handoffs("f", "released by bob") == []
        (run,) = store.history(schedule="f")
        assert run.status is RunStatus.CANCELLED and run.error == "released by alice"
        with pytest.raises(ScheduleNotFoundError):
            store.release_handoffs("no-such-schedule", "released by alice")

    def test_a_started_handoff_is_not_released(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        run_id = _hand_off(store, "g")
        assert store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING) == (True, RunStatus.STARTED)
        assert store.release_handoffs("g", "released by alice") == []
        (run,) = store.history(schedule="g")
        assert run.status is RunStatus.STARTED

    def test_the_worker_that_started_a_handoff_is_kept_and_a_refused_report_names_none(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        run_id = _hand_off(store, "h")
        (run,) = store.history(schedule="h")
        assert run.worker is None  # handed off, no worker has it yet
        started = store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING, worker="celery@alpha")
        assert started == (True, RunStatus.STARTED)
        got = store.get_run(run_id)
        assert got is not None and got.worker == "celery@alpha"
        # A second delivery, taken by another worker, is refused: the row keeps the first worker.
        refused = store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING, worker="celery@beta")
        assert refused == (False, RunStatus.STARTED)
        (run,) = store.history(schedule="h")
        assert run.worker == "celery@alpha"
        # The end report names no worker: it keeps the one that started it.
        assert store.report_handoff(run_id, RunStatus.SUCCEEDED, expect={RunStatus.STARTED}) == (
            True,
            RunStatus.SUCCEEDED,
        )
        (run,) = store.history(schedule="h")
        assert run.status is RunStatus.SUCCEEDED and run.worker == "celery@alpha"
        assert run.as_json()["worker"] == "celery@alpha"
        # A late end naming a worker (the run already ended) is refused and writes nothing.
        late = store.report_handoff(run_id, RunStatus.FAILED, expect={RunStatus.STARTED}, worker="celery@gamma")
        assert late == (False, RunStatus.SUCCEEDED)
        (found,) = store.find_runs(schedule="h")
        assert found.worker == "celery@alpha" and found.status is RunStatus.SUCCEEDED

    def test_a_released_handoff_keeps_no_worker_a_late_worker_names(self, store: Store) -> None:
        if not _supports_handoffs(store):
            return
        run_id = _hand_off(store, "i")
        store.release_handoffs("i", "released by alice")
        refused = store.report_handoff(run_id, RunStatus.STARTED, expect=_WAITING, worker="rq:worker-1")
        assert refused == (False, RunStatus.CANCELLED)
        (run,) = store.history(schedule="i")
        assert run.worker is None and run.status is RunStatus.CANCELLED
        # A long name (no queue gives one by default) is kept cut, not refused: the start lands.
        other = _hand_off(store, "j")
        long_name = "w" * 500
        assert store.report_handoff(other, RunStatus.STARTED, expect=_WAITING, worker=long_name) == (
            True,
            RunStatus.STARTED,
        )
        (run,) = store.history(schedule="j")
        assert run.worker is not None and long_name.startswith(run.worker) and 0 < len(run.worker) <= 200
