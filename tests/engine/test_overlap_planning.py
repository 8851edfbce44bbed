"""The pure planning of ``overlap`` (tickwork.engine.overlap.plan_overlap) against hand-computed
times: which fire that passed during a run waits, which are skipped and why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tickwork.abc import Executor
from tickwork.engine.overlap import MAX_WAITING, CancelWatch, WaitingFires, not_stopped, plan_overlap
from tickwork.engine.planning import FirePlan
from tickwork.structures import Claim, Finish, JobCall, Outcome, RunStatus, ScheduleSpec

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def every(seconds: int):  # type: ignore[no-untyped-def]
    """A trigger's next_after for fires every ``seconds`` from T0."""

    def next_after(after: datetime) -> datetime:
        n = int((after - T0).total_seconds() // seconds) + 1
        return T0 + timedelta(seconds=n * seconds)

    return next_after


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def secs(plan: FirePlan) -> tuple[float | None, list[float]]:
    nxt = None if plan.next_fire is None else (plan.next_fire - T0).total_seconds()
    return nxt, [(t - T0).total_seconds() for t, _ in plan.skipped]


def test_buffer_one_keeps_the_latest_passed_fire_and_skips_the_older_ones() -> None:
    # Fire of 1 s, claimed on time, ran until 5.5 s: 2, 3, 4, 5 passed meanwhile.
    plan = plan_overlap(every(1), overlap="buffer_one", scheduled_for=at(1), claimed_at=at(1), now=at(5.5), grace=30)
    assert secs(plan) == (5.0, [2.0, 3.0, 4.0])
    for _, reason in plan.skipped:
        assert reason == (
            "due while the previous run was still active "
            "(overlap buffer_one: only the latest due fire, 2026-03-01T12:00:05Z, waits for it)"
        )


def test_buffer_one_with_nothing_passed_is_the_triggers_next_fire() -> None:
    plan = plan_overlap(every(10), overlap="buffer_one", scheduled_for=at(10), claimed_at=at(10), now=at(12), grace=30)
    assert secs(plan) == (20.0, [])


def test_buffer_one_keeps_a_fire_older_than_the_grace() -> None:
    # An hourly job that ran 70 minutes: the fire of 13:00 waits although it is 10 minutes old.
    plan = plan_overlap(
        every(3600), overlap="buffer_one", scheduled_for=at(0), claimed_at=at(0), now=at(4200), grace=30
    )
    assert secs(plan) == (3600.0, [])


def test_buffer_one_names_fires_that_passed_before_the_claim() -> None:
    # Claimed 2.5 s late (fires of 1 and 2 passed before the claim), ended at 4.2.
    plan = plan_overlap(every(1), overlap="buffer_one", scheduled_for=at(0), claimed_at=at(2.5), now=at(4.2), grace=30)
    assert secs(plan) == (4.0, [1.0, 2.0, 3.0])
    reasons = [r for _, r in plan.skipped]
    assert reasons[0].startswith("passed before the previous fire was claimed (2.5s late; overlap buffer_one")
    assert reasons[1].startswith("passed before the previous fire was claimed")
    assert reasons[2].startswith("due while the previous run was still active (overlap buffer_one")


def test_cancel_other_plans_the_latest_fire_to_replace_the_run() -> None:
    plan = plan_overlap(every(1), overlap="cancel_other", scheduled_for=at(1), claimed_at=at(1), now=at(3.1), grace=30)
    assert secs(plan) == (3.0, [2.0])
    assert "overlap cancel_other: only the latest due fire, 2026-03-01T12:00:03Z, replaces it" in plan.skipped[0][1]


def test_buffer_all_keeps_every_passed_fire_in_order() -> None:
    plan = plan_overlap(every(1), overlap="buffer_all", scheduled_for=at(1), claimed_at=at(1), now=at(4.5), grace=30)
    # 2, 3 and 4 wait: the next fire is the oldest of them; none is skipped (each is planned
    # again at the end of the run before it).
    assert secs(plan) == (2.0, [])
    # The waiting fire of 2 ran from 4.5 to 6: 3, 4, 5 and 6 wait, the oldest first.
    plan = plan_overlap(every(1), overlap="buffer_all", scheduled_for=at(2), claimed_at=at(4.5), now=at(6), grace=30)
    assert secs(plan) == (3.0, [])


def test_buffer_all_drops_fires_older_than_the_grace() -> None:
    plan = plan_overlap(every(1), overlap="buffer_all", scheduled_for=at(0), claimed_at=at(0), now=at(10), grace=3)
    # Fires of 1..6 are older than 10 - 3 = 7: skipped; 7..10 wait.
    nxt, skipped = secs(plan)
    assert (nxt, skipped) == (7.0, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert all(r == "waited longer than the misfire grace (3s; overlap buffer_all)" for _, r in plan.skipped)


def test_buffer_all_caps_the_waiting_fires_at_max_catchup_keeping_the_latest() -> None:
    plan = plan_overlap(
        every(1),
        overlap="buffer_all",
        scheduled_for=at(0),
        claimed_at=at(0),
        now=at(6),
        grace=30,
        max_catchup=2,
    )
    assert secs(plan) == (5.0, [1.0, 2.0, 3.0, 4.0])
    assert all(r == "beyond max_catchup 2 (overlap buffer_all)" for _, r in plan.skipped)


def test_buffer_all_never_keeps_more_than_its_limit() -> None:
    plan = plan_overlap(
        every(1),
        overlap="buffer_all",
        scheduled_for=at(0),
        claimed_at=at(0),
        now=at(MAX_WAITING + 50),
        grace=10 * MAX_WAITING,
    )
    assert plan.next_fire == at(51)
    # The 50 dropped ones are recorded (within the record cap of 100).
    assert [t for t, _ in plan.skipped] == [at(s) for s in range(1, 51)]
    assert f"beyond the {MAX_WAITING} fires" in plan.skipped[0][1]


def test_records_are_capped_and_a_long_gap_is_jumped() -> None:
    # 500 passed fires: buffer_one records 100 of the older ones and still keeps the latest.
    plan = plan_overlap(every(1), overlap="buffer_one", scheduled_for=at(0), claimed_at=at(0), now=at(500.5), grace=30)
    assert plan.next_fire == at(500) and len(plan.skipped) == 100
    # buffer_all with a short grace: 100 stale ones recorded, the rest jumped, the last 3 wait.
    plan = plan_overlap(every(1), overlap="buffer_all", scheduled_for=at(0), claimed_at=at(0), now=at(500), grace=2)
    assert plan.next_fire == at(498) and len(plan.skipped) == 100


def test_skip_and_allow_are_not_planned_here() -> None:
    for overlap in ("skip", "allow"):
        with pytest.raises(ValueError, match="not planned here"):
            plan_overlap(every(1), overlap=overlap, scheduled_for=at(0), claimed_at=at(0), now=at(3), grace=30)


def _claim(fire: datetime, schedule_id: int = 7) -> Claim:
    spec = ScheduleSpec("s", "cron", "* * * * * *", "m:f", overlap="buffer_one")
    return Claim(schedule_id, spec, fire, 1, fire, 1)


def test_a_waiting_fire_is_late_from_the_end_it_waited_for() -> None:
    waiting = WaitingFires()
    ended = at(400)
    waiting.note(_claim(at(0)), FirePlan(at(360)), ended)
    assert len(waiting) == 1
    assert waiting.late_since(_claim(at(360))) == ended  # the fire it left waiting
    assert waiting.late_since(_claim(at(360))) == at(360)  # once only
    waiting.note(_claim(at(0)), FirePlan(at(360)), ended)
    assert waiting.late_since(_claim(at(361))) == at(361)  # another fire: its own time
    # A plan whose next fire is in the future leaves nothing waiting.
    waiting.note(_claim(at(0)), FirePlan(at(500)), ended)
    assert len(waiting) == 0


class _Unstoppable(Executor):
    """An executor that can stop nothing (as a thread pool), counting the requests."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[int, str]] = []

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        pass

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        pass

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        pass

    def cancel(self, run_id: int, reason: str) -> bool:
        self.asked.append((run_id, reason))
        return False


def test_the_cancel_watch_asks_at_the_next_fire_and_notes_a_run_it_could_not_stop() -> None:
    watch, executor = CancelWatch(), _Unstoppable()
    claim = _claim(at(10))
    watch.watch(claim, executor, every(10), now=at(10), now_mono=100.0)
    assert watch.earliest() == 110.0 and len(watch) == 1
    assert watch.cancel_due(109.9) == 0 and executor.asked == []
    assert watch.cancel_due(110.0) == 0  # asked, and refused
    assert executor.asked == [
        (1, "cancelled: the next fire (2026-03-01T12:00:20Z) came due while it ran (overlap cancel_other)")
    ]
    assert watch.earliest() is None
    assert watch.ended(1, arrived=113.0) == at(20)  # ended after: noted as not stopped
    # A run whose end arrived before the fire came (the loop had not seen it yet) is not noted.
    watch.watch(replace(claim, run_id=2), executor, every(10), now=at(10), now_mono=100.0)
    watch.cancel_due(110.0)
    assert watch.ended(2, arrived=109.5) is None
    # A run that ended before its time is not asked at all.
    watch.watch(replace(claim, run_id=3), executor, every(10), now=at(10), now_mono=100.0)
    assert watch.ended(3, arrived=105.0) is None
    assert watch.earliest() is None and watch.cancel_due(200.0) == 0 and len(watch) == 0
    assert [run for run, _ in executor.asked] == [1, 2]


def test_a_run_not_stopped_says_so_on_its_end() -> None:
    finish = Finish(
        _claim(at(1)),
        Outcome(RunStatus.FAILED, error="boom"),
        at(4),
        skipped=((at(2), "due while ... (overlap cancel_other: only the latest due fire, X, replaces it)"),),
    )
    noted = not_stopped(finish, at(2))
    assert noted.outcome.status is RunStatus.FAILED
    assert noted.outcome.error is not None and noted.outcome.error.startswith("boom\nnot stopped when the next fire")
    assert noted.skipped[0][1].endswith("runs after it: the run could not be stopped)")
    assert noted.next_fire == at(4)


def test_a_late_start_is_stopped_by_the_first_fire_after_it_and_a_failing_trigger_watches_nothing() -> None:
    watch, executor = CancelWatch(), _Unstoppable()
    # The fire of 10 s started at 23 s: 20 s passed before it started; it is stopped at 30 s.
    watch.watch(_claim(at(10)), executor, every(10), now=at(23), now_mono=500.0)
    assert watch.earliest() == 507.0

    def broken(after: datetime) -> datetime:
        raise OverflowError("date value out of range")

    other = CancelWatch()
    other.watch(_claim(at(10)), executor, broken, now=at(10), now_mono=500.0)
    assert other.earliest() is None and len(other) == 0
