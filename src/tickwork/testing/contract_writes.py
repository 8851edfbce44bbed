"""The store contract's tests of writes on a schedule whose run is in flight (docs/claim-protocol.md,
"Writes while a run is in flight"): an update, enable, disable, pause or resume never changes the
claim or start state of the run, so the takeover never gives a started fire back and never deletes
its run row, no other claim starts beside it, and the next fire the write chose applies when the
claim is released."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from ..abc import Store
from ..structures import Claim, Pause, RunStatus, SchedulePlan, ScheduleState
from .contract_helpers import MINUTE, claim_all, finish, spec
from .contract_starts import AHEAD, claim_ahead, wait_until

HOUR = timedelta(hours=1)
#: The next fire the writes choose: soon, so that it passes while the run is still in flight
#: (a started run that looked unstarted was taken over once its written next fire had passed).
SOON = timedelta(seconds=0.3)

#: Each write an operator can make on a running schedule, as a function of the store and the
#: database clock; what it leaves as the next fire.
WRITES: dict[str, tuple[Callable[[Store, datetime], object], Callable[[datetime], datetime | None]]] = {
    "update with a new trigger": (
        lambda s, t: s.update(spec("a", expression="0 * * * *"), t + SOON),
        lambda t: t + SOON,
    ),
    "update keeping the next fire": (
        lambda s, t: s.update(spec("a", timeout=timedelta(seconds=7)), None, retime=False),
        lambda t: t + MINUTE,
    ),
    "disable": (lambda s, t: s.set_enabled("a", False, None), lambda t: None),
    "disable and enable": (
        lambda s, t: (s.set_enabled("a", False, None), s.set_enabled("a", True, t + SOON)),
        lambda t: t + SOON,
    ),
    "sync or import --replace (a batch write)": (
        lambda s, t: s.write_schedules(
            lambda _: SchedulePlan(retrigger=(spec("a", expression="*/2 * * * *"),)),
            lambda _spec, _now: t + SOON,
        ),
        lambda t: t + SOON,
    ),
    "pause and resume": (
        lambda s, t: (s.set_enabled("a", False, None, Pause("x", by="ops")), s.set_enabled("a", True, t + SOON)),
        lambda t: t + SOON,
    ),
}


class WritesDuringRunContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    def _started(self, store: Store) -> tuple[Claim, datetime]:
        """Schedule ``a`` claimed at its fire time (a started run), and that time."""
        t = store.now()
        store.add(spec("a"), t)
        (claim,) = claim_all(store)
        assert not claim.early and claim.run_id is not None
        return claim, t

    def test_no_write_makes_a_started_run_look_unstarted(self, store: Store) -> None:
        for name, (write, expected) in WRITES.items():
            claim, t = self._started(store)
            before = store.get("a")
            write(store, t)
            during = store.get("a")
            assert (during.state, during.claimed_by, during.claimed_at, during.claim_seq) == (
                before.state,
                before.claimed_by,
                before.claimed_at,
                before.claim_seq,
            ), name
            # Past any deadline: a started run is never given back, its row never deleted, and no
            # other claim of the schedule starts beside it.
            wait_until(store, t + SOON + timedelta(seconds=0.05))
            assert store.take_over_unstarted(0.0) == 0, name
            assert claim_all(store, node="n2", ahead=7200.0) == [], name
            (run,) = store.history(schedule="a")
            assert run.status is RunStatus.RUNNING and run.scheduled_for == claim.scheduled_for, name
            # Its end lands under its fence, and the next fire is the one the write chose.
            assert finish(store, claim, t + MINUTE), name
            after = store.get("a")
            assert after.state is ScheduleState.IDLE and after.next_fire == expected(t), name
            store.remove("a")

    def test_a_write_during_a_run_shows_the_next_fire_it_chose(self, store: Store) -> None:
        claim, t = self._started(store)
        store.update(spec("a", expression="0 * * * *"), t + HOUR)
        assert store.get("a").next_fire == t + HOUR  # what jobs list and show print
        assert finish(store, claim, t + MINUTE)
        assert store.get("a").next_fire == t + HOUR

    def test_a_dead_nodes_release_applies_the_next_fire_a_write_chose(self, store: Store) -> None:
        self._started(store)
        store.set_enabled("a", False, None)
        store.heartbeat("n1")
        assert store.release_node("n1", "gone") == 1
        after = store.get("a")
        assert after.state is ScheduleState.IDLE and after.next_fire is None and not after.spec.enabled
        (run,) = store.history(schedule="a")
        assert run.status is RunStatus.ABANDONED

    def test_a_fire_claimed_ahead_and_redefined_does_not_start(self, store: Store) -> None:
        # Disabled after the claim and before its time: the fire of the old definition is not
        # started, the takeover gives it back at its deadline, and it stays disabled.
        claim = claim_ahead(store, "a", AHEAD)
        store.set_enabled("a", False, None)
        wait_until(store, claim.scheduled_for)
        assert store.start_held("n1", [claim], 5.0) == [False]
        wait_until(store, claim.scheduled_for + timedelta(seconds=0.1))
        assert store.take_over_unstarted(0.05) == 1
        after = store.get("a")
        assert after.state is ScheduleState.IDLE and after.next_fire is None
        assert store.history(schedule="a") == []
        assert claim_all(store, node="n2", ahead=7200.0) == []

    def test_an_expired_pause_resumed_during_a_run_waits_for_its_end(self, store: Store) -> None:
        claim, t = self._started(store)
        store.set_enabled("a", False, None, Pause("x", by="ops", until=t + timedelta(seconds=0.2)))
        wait_until(store, t + timedelta(seconds=0.3))
        assert [s.name for s in store.resume_expired(lambda spec, now: now + HOUR)] == ["a"]
        during = store.get("a")
        assert during.state is ScheduleState.RUNNING and during.claimed_at == claim.claimed_at
        assert store.take_over_unstarted(0.0) == 0
        assert finish(store, claim, t + MINUTE)
        after = store.get("a")
        assert after.spec.enabled and after.next_fire is not None and after.next_fire > t + MINUTE
