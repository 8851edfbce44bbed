"""The store contract's tests of fenced starts and takeovers (docs/claim-protocol.md, invariant 4):
a fire claimed ahead starts only through :meth:`~tickwork.abc.Store.start_held`, within its
deadline, and once the deadline passed any node's :meth:`~tickwork.abc.Store.take_over_unstarted`
gives it back to be claimed and run again, exactly once; a start recorded ahead of the fire's time
(within the lead) is a start, never given back."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from ..abc import Store
from ..structures import Claim, Finish, Outcome, RunStatus, ScheduleSpec, ScheduleState

OK = Outcome(RunStatus.SUCCEEDED)
# How far ahead the tests that then wait for the fire time claim it. An add and a claim on a
# loaded machine (a full suite on 2 cores, a MariaDB under load) have taken more than 1 s, after
# which the claim was no longer early; 2 s keeps the tests short and the claim early.
AHEAD = 2.0


def _spec(name: str) -> ScheduleSpec:
    return ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target="m:f")


def wait_until(store: Store, moment: datetime) -> None:
    """Sleep until the store's clock is past ``moment``."""
    while store.now() <= moment:
        time.sleep(0.01)


def claim_ahead(store: Store, name: str, in_seconds: float, node: str = "n1") -> Claim:
    """Add ``name`` due ``in_seconds`` from the store's clock and claim it ahead, as ``node``."""
    fire = store.now() + timedelta(seconds=in_seconds)
    store.add(_spec(name), fire)
    (claim,) = store.claim_due(node, limit=10, buckets=None, ahead=in_seconds + 5)
    assert claim.early and claim.scheduled_for == fire and claim.run_id is not None
    return claim


class FencedStartContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    def test_a_held_fire_starts_once_and_not_before_its_time(self, store: Store) -> None:
        claim = claim_ahead(store, "held", AHEAD)
        assert store.start_held("n1", [claim], 5.0) == [False]  # not due yet: never early
        wait_until(store, claim.scheduled_for)
        assert store.start_held("n2", [claim], 5.0) == [False]  # not the holder
        assert store.start_held("n1", [claim], 5.0) == [True]
        assert store.start_held("n1", [claim], 5.0) == [False]  # started already
        assert store.take_over_unstarted(0.0) == 0  # a started fire is the holder's run
        assert store.finish("n1", [Finish(claim, OK, claim.scheduled_for + timedelta(minutes=1))]) == [True]
        (run,) = store.history(schedule="held")
        assert run.status is RunStatus.SUCCEEDED and run.scheduled_for == claim.scheduled_for

    def test_a_held_fire_may_be_started_within_its_lead_and_is_then_never_taken_over(self, store: Store) -> None:
        claim = claim_ahead(store, "led", AHEAD)
        assert store.start_held("n1", [claim], 0.05, lead=0.2) == [False]  # due in ~2 s: beyond the lead
        assert store.start_held("n1", [claim], 0.05, lead=30.0) == [True]
        assert store.start_held("n1", [claim], 0.05, lead=30.0) == [False]  # started already
        # Recorded as started at its fire time: past its deadline, nobody takes it over.
        wait_until(store, claim.scheduled_for + timedelta(seconds=0.1))
        assert store.take_over_unstarted(0.05) == 0
        assert store.get("led").state is ScheduleState.RUNNING
        assert store.finish("n1", [Finish(claim, OK, claim.scheduled_for + timedelta(minutes=1))]) == [True]
        (run,) = store.history(schedule="led")
        assert run.status is RunStatus.SUCCEEDED

    def test_a_renewal_before_the_fire_time_keeps_a_start_recorded_ahead_started(self, store: Store) -> None:
        # The node renews every claim it tracks, those granted ahead included: a renewal between
        # the grant and the fire time must not make the fire look unstarted again (it would then
        # be taken over and run twice, and a release at shutdown would delete its run).
        claim = claim_ahead(store, "renewed", AHEAD)
        assert store.start_held("n1", [claim], 0.05, lead=30.0) == [True]
        store.renew("n1", [claim])
        wait_until(store, claim.scheduled_for + timedelta(seconds=0.1))
        assert store.take_over_unstarted(0.05) == 0
        assert store.release_node("n1", "stopped") == 1
        (run,) = store.history(schedule="renewed")
        assert run.status is RunStatus.ABANDONED

    def test_a_held_fire_past_its_deadline_cannot_start_and_is_taken_over(self, store: Store) -> None:
        late = claim_ahead(store, "late", AHEAD)
        on_time = claim_ahead(store, "on-time", 30.0)
        wait_until(store, late.scheduled_for + timedelta(seconds=0.1))
        assert store.start_held("n1", [late], 0.05) == [False]
        assert store.take_over_unstarted(0.05) == 1  # the other one's deadline is far away
        schedule = store.get("late")
        assert schedule.state is ScheduleState.IDLE and schedule.next_fire == late.scheduled_for
        assert store.history(schedule="late") == []  # as if the claim had never happened
        assert store.get("on-time").state is ScheduleState.RUNNING
        # Claimed again (overdue now: not early) by another node, recorded and run once.
        (again,) = store.claim_due("n2", limit=10, buckets=None)
        assert again.schedule_id == late.schedule_id and not again.early and again.run_id is not None
        # However generous its own grace, the old holder's start is refused: the fence moved.
        assert store.start_held("n1", [late], 3600.0) == [False]
        assert store.finish("n1", [Finish(late, OK, None)]) == [False]
        assert store.finish("n2", [Finish(again, OK, late.scheduled_for + timedelta(minutes=1))]) == [True]
        runs = store.history(schedule="late")
        assert [(r.node, r.status) for r in runs] == [("n2", RunStatus.SUCCEEDED)]
        assert store.unclaim("n1", [on_time]) == 1

    def test_a_dead_nodes_held_fires_are_given_back_not_abandoned(self, store: Store) -> None:
        held = claim_ahead(store, "held", 30.0)
        assert store.release_node("n1", "node n1 is dead") == 0
        schedule = store.get("held")
        assert schedule.state is ScheduleState.IDLE and schedule.next_fire == held.scheduled_for
        assert store.history(schedule="held") == []
        assert store.start_held("n1", [held], 3600.0) == [False]
        (again,) = store.claim_due("n2", limit=10, buckets=None, ahead=60)
        assert again.run_id is not None and again.claim_seq != held.claim_seq

    def test_the_reconcile_gives_back_untracked_held_fires(self, store: Store) -> None:
        claim_ahead(store, "held", 30.0)
        store.release_untracked("n1", [], "untracked")
        assert store.get("held").state is ScheduleState.IDLE
        assert store.history(schedule="held") == []

    def test_refresh_heartbeat_tells_a_node_its_record_was_removed(self, store: Store) -> None:
        assert store.refresh_heartbeat("n1") is None
        first = store.heartbeat("n1")
        refreshed = store.refresh_heartbeat("n1")
        assert refreshed is not None and refreshed >= first
        store.remove_node("n1")
        assert store.refresh_heartbeat("n1") is None
        assert [n.id for n in store.nodes()] == []
