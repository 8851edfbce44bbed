"""The store contract's tests of a start window's round trip (docs/claim-protocol.md#start-windows):
:meth:`~tickwork.abc.Store.start_round` starts held fires, runs the takeover and writes ends,
each part decided as its own method decides it (:mod:`.contract_starts` for those)."""

from __future__ import annotations

from datetime import timedelta

from ..abc import Store
from ..structures import Finish, Outcome, RunStatus, ScheduleSpec, ScheduleState
from .contract_starts import AHEAD, claim_ahead, wait_until

OK = Outcome(RunStatus.SUCCEEDED)


class StartRoundContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    def test_a_start_round_starts_takes_over_and_ends_each_by_its_own_fence(self, store: Store) -> None:
        # n2 held a fire past its deadline: the round's takeover gives it back.
        late = claim_ahead(store, "late", AHEAD, node="n2")
        wait_until(store, late.scheduled_for + timedelta(seconds=0.1))
        # n1 runs a fire claimed when due, whose end rides on the round ...
        store.add(ScheduleSpec(name="due", trigger_kind="cron", expression="* * * * *", target="m:f"), store.now())
        (due,) = store.claim_due("n1", limit=10, buckets=None)
        assert not due.early and due.run_id is not None
        # ... and holds a fire due within the round's lead.
        held = claim_ahead(store, "held", 30.0)
        next_fire = due.scheduled_for + timedelta(minutes=1)
        done = store.start_round("n1", [held], 0.05, 60.0, take_over=True, finishes=[Finish(due, OK, next_fire)])
        assert done.granted == (True,) and done.taken_over == 1 and done.ended == (True,) and done.error is None
        started = store.get("held")
        assert started.state is ScheduleState.RUNNING and started.claimed_at == started.next_fire
        given_back = store.get("late")
        assert given_back.state is ScheduleState.IDLE and given_back.next_fire == late.scheduled_for
        assert store.history(schedule="late") == []  # as if n2's claim had never happened
        ended = store.get("due")
        assert ended.state is ScheduleState.IDLE and ended.next_fire == next_fire
        assert [r.status for r in store.history(schedule="due")] == [RunStatus.SUCCEEDED]
        # Every part stays fenced: a start recorded is not recorded again, the old holder of a
        # fire taken over neither starts it nor lands its end, and nothing more is taken over.
        again = store.start_round("n1", [held], 3600.0, 60.0, take_over=True)
        assert again.granted == (False,) and again.taken_over == 0 and again.ended == ()
        fenced = store.start_round("n2", [late], 3600.0, 60.0, finishes=[Finish(late, OK, None)])
        assert fenced.granted == (False,) and fenced.taken_over is None and fenced.ended == (False,)
        assert store.get("late").state is ScheduleState.IDLE
        # The fire given back is claimed again and run once.
        (rerun,) = store.claim_due("n1", limit=10, buckets=None)
        assert rerun.schedule_id == late.schedule_id and rerun.run_id is not None
        assert store.finish("n1", [Finish(rerun, OK, late.scheduled_for + timedelta(minutes=1))]) == [True]
        assert [(r.node, r.status) for r in store.history(schedule="late")] == [("n1", RunStatus.SUCCEEDED)]
        assert store.finish("n1", [Finish(held, OK, held.scheduled_for + timedelta(minutes=1))]) == [True]

    def test_a_start_round_refuses_a_start_past_its_deadline_and_takes_it_over(self, store: Store) -> None:
        # The start and the takeover of one fire in one round: the start is refused (its
        # deadline passed) and the takeover gives it back; never both started and given back.
        claim = claim_ahead(store, "overdue", AHEAD)
        wait_until(store, claim.scheduled_for + timedelta(seconds=0.1))
        done = store.start_round("n1", [claim], 0.05, 0.0, take_over=True)
        assert done.granted == (False,) and done.taken_over == 1
        assert store.get("overdue").state is ScheduleState.IDLE and store.history(schedule="overdue") == []
