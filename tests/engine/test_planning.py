"""The pure fire-planning functions: no store, no threads, no clock but the times passed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tickwork.engine.nextfires import NextFires
from tickwork.engine.planning import (
    MAX_RETRY_DELAY,
    FirePlan,
    LastAnswer,
    misfire_reason,
    plan_next_fire,
    plan_retry,
    retry_delay,
    with_holidays,
)
from tickwork.errors import TriggerError
from tickwork.structures import MAX_RETRIES, Claim, MisfirePolicy, ScheduleSpec

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def every(seconds: float):  # type: ignore[no-untyped-def]
    """A next-after function firing every ``seconds`` from T0."""

    def next_after(after: datetime) -> datetime | None:
        n = int((after - T0).total_seconds() // seconds) + 1
        return T0 + timedelta(seconds=n * seconds)

    return next_after


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_a_run_that_ends_before_the_next_fire_skips_nothing() -> None:
    plan = plan_next_fire(
        every(10), scheduled_for=at(10), claimed_at=at(10), now=at(12), policy=MisfirePolicy.SKIP, grace=30
    )
    assert plan == FirePlan(at(20), ())


def test_fires_passed_while_running_are_recorded_as_still_active() -> None:
    plan = plan_next_fire(
        every(10), scheduled_for=at(10), claimed_at=at(10), now=at(35), policy=MisfirePolicy.SKIP, grace=30
    )
    assert plan.next_fire == at(40)
    assert [t for t, _ in plan.skipped] == [at(20), at(30)]
    assert all("still active" in reason for _, reason in plan.skipped)


def test_fires_passed_before_a_late_claim_say_so() -> None:
    late = plan_next_fire(
        every(10), scheduled_for=at(10), claimed_at=at(25), now=at(25), policy=MisfirePolicy.SKIP, grace=30
    )
    assert [reason for _, reason in late.skipped] == ["passed before the previous fire was claimed (15.0s late)"]
    missed = plan_next_fire(
        every(10), scheduled_for=at(10), claimed_at=at(55), now=at(55), policy=MisfirePolicy.SKIP, grace=30
    )
    assert all(reason.startswith("missed: no node ran it in time") for _, reason in missed.skipped)


def test_policy_all_keeps_the_fires_within_the_grace_to_run_them() -> None:
    plan = plan_next_fire(
        every(10), scheduled_for=at(10), claimed_at=at(65), now=at(65), policy=MisfirePolicy.ALL, grace=30
    )
    assert [t for t, _ in plan.skipped] == [at(20), at(30)]
    assert plan.next_fire == at(40)


def test_a_long_gap_records_at_most_the_limit_and_jumps() -> None:
    plan = plan_next_fire(
        every(1),
        scheduled_for=at(1),
        claimed_at=at(1),
        now=at(10_000),
        policy=MisfirePolicy.SKIP,
        grace=30,
        max_skipped=5,
    )
    assert len(plan.skipped) == 5
    assert plan.next_fire == at(10_001)


def test_a_trigger_that_ends_has_no_next_fire() -> None:
    plan = plan_next_fire(
        lambda after: None, scheduled_for=at(1), claimed_at=at(1), now=at(2), policy=MisfirePolicy.SKIP, grace=30
    )
    assert plan == FirePlan(None, ())


@pytest.mark.parametrize(
    ("start", "attempt", "policy", "skipped"),
    [
        (at(40), 1, MisfirePolicy.SKIP, False),  # exactly the grace late
        (at(40.1), 1, MisfirePolicy.SKIP, True),
        (at(40.1), 1, MisfirePolicy.ALL, True),
        (at(500), 1, MisfirePolicy.ONCE, False),
        (at(500), 2, MisfirePolicy.SKIP, False),  # a retry is never a misfire
    ],
)
def test_misfire_is_judged_at_the_start(start: datetime, attempt: int, policy: MisfirePolicy, skipped: bool) -> None:
    reason = misfire_reason(scheduled_for=at(10), starting_at=start, attempt=attempt, policy=policy, grace=30)
    assert (reason is not None) is skipped
    if reason:
        assert reason.startswith(f"missed by {(start - at(10)).total_seconds():.1f}s (misfire policy {policy.value}")


def test_retry_delay_doubles_and_never_overflows() -> None:
    assert [retry_delay(0.5, a) for a in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert retry_delay(0.0, 5000) == 0.0
    assert retry_delay(10.0, 5000) == MAX_RETRY_DELAY
    assert retry_delay(1e308, 3) == MAX_RETRY_DELAY


def test_plan_retry_stops_before_the_next_fire_and_after_the_cap() -> None:
    kwargs = {"scheduled_for": at(3600), "backoff": 0.0, "now": at(3600)}
    assert plan_retry(every(3600), attempt=1, retries=3, **kwargs) == 0.0  # type: ignore[arg-type]
    assert plan_retry(every(3600), attempt=4, retries=3, **kwargs) is None  # type: ignore[arg-type]
    assert plan_retry(every(3600), attempt=MAX_RETRIES, retries=5000, **kwargs) == 0.0  # type: ignore[arg-type]
    assert plan_retry(every(3600), attempt=MAX_RETRIES + 1, retries=5000, **kwargs) is None  # type: ignore[arg-type]
    overlap = plan_retry(every(10), scheduled_for=at(10), attempt=1, retries=3, backoff=10.0, now=at(10))
    assert overlap is None


def test_last_answer_asks_the_trigger_once_per_question_in_a_row() -> None:
    asked: list[datetime] = []

    def next_after(after: datetime) -> datetime | None:
        asked.append(after)
        if after.year == 1999:
            raise ValueError("no such time")
        return after + timedelta(hours=1)

    remembering = LastAnswer(next_after)
    t = datetime(2026, 11, 24, tzinfo=UTC)
    assert [remembering(t), remembering(t)] == [t + timedelta(hours=1)] * 2
    assert asked == [t]
    # The same instant in another zone is the same question.
    assert remembering(t.astimezone(timezone(timedelta(hours=2)))) == t + timedelta(hours=1)
    assert asked == [t]
    later = t + timedelta(minutes=1)
    assert remembering(later) == later + timedelta(hours=1)
    assert remembering(t) == t + timedelta(hours=1)
    assert asked == [t, later, t]
    # A search that raised leaves no answer behind: the next question is asked again.
    bad = datetime(1999, 1, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="no such time"):
        remembering(bad)
    with pytest.raises(ValueError, match="no such time"):
        remembering(bad)
    assert remembering(t) == t + timedelta(hours=1)
    assert asked == [t, later, t, bad, bad]


def test_next_fires_compiles_each_trigger_once_and_parks_what_cannot_compile() -> None:
    fires = NextFires(None)
    first = ScheduleSpec("a", "cron", "0 * * * *", "m:f")
    second = ScheduleSpec("b", "cron", "0 * * * *", "m:g")
    other_zone = ScheduleSpec("c", "cron", "0 * * * *", "m:g", timezone="Asia/Kolkata")
    assert fires.of(first, T0) is fires.of(second, T0)
    assert fires.of(other_zone, T0) is not fires.of(first, T0)
    assert fires.of(first, T0)(T0) == T0 + timedelta(hours=1)
    assert fires.of(other_zone, T0)(T0) == T0 + timedelta(minutes=30)
    with pytest.raises(TriggerError):
        fires.of(ScheduleSpec("d", "cron", "not a cron", "m:f"), T0)


def _payroll_claim(scheduled_for: datetime) -> tuple[LastAnswer, Claim]:
    """A monthly 09:00 Berlin schedule on the DE-BE calendar (1 May 2026, a Friday, is Labour
    Day), as the engine plans it, and its claim of ``scheduled_for``."""
    pytest.importorskip("holidays")
    spec = ScheduleSpec(
        name="payroll",
        trigger_kind="cron",
        expression="0 9 1 * *",
        target="m:f",
        timezone="Europe/Berlin",
        holidays="DE-BE",
    )
    next_after = NextFires(None).of(spec, scheduled_for)
    assert isinstance(next_after, LastAnswer)
    return next_after, Claim(1, spec, scheduled_for, 1, scheduled_for, 1)


APRIL_1, LABOUR_DAY, JUNE_1 = (datetime(2026, m, 1, 7, tzinfo=UTC) for m in (4, 5, 6))


def test_a_holiday_drop_is_never_planned_ahead_of_its_time() -> None:
    next_after, claim = _payroll_claim(APRIL_1)

    def recorded_until(c: Claim) -> datetime | None:
        # 1 Jan (Neujahr), 1 Feb and 1 Mar (Sundays) were dropped before 1 April: recorded already.
        return datetime(2026, 3, 1, 8, tzinfo=UTC)

    plan = FirePlan(JUNE_1)
    # 1 April's end plans past 1 May: not recorded yet, its time has not come.
    assert with_holidays(plan, next_after, claim, APRIL_1 + timedelta(seconds=5), recorded_until) is plan
    # A run that lasted past 1 May records it at its end: its time has come.
    late = with_holidays(plan, next_after, claim, LABOUR_DAY + timedelta(hours=1), recorded_until)
    assert late.skipped == ((LABOUR_DAY, "on_holiday skip: 2026-05-01 is Labor Day (DE-BE)"),)
    assert late.next_fire == JUNE_1


def test_the_history_is_read_only_after_a_drop() -> None:
    july_1 = datetime(2026, 7, 1, 7, tzinfo=UTC)
    next_after, claim = _payroll_claim(july_1)
    asked: list[Claim] = []

    def recorded_until(c: Claim) -> datetime | None:
        asked.append(c)
        return None

    # 1 August 2026, a Saturday, is dropped: still future at 1 July's end.
    plan = FirePlan(datetime(2026, 9, 1, 7, tzinfo=UTC))
    assert with_holidays(plan, next_after, claim, july_1, recorded_until) is plan
    assert asked == [], "1 June to 1 July drops nothing: no history read"


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        (APRIL_1 + timedelta(seconds=5), [LABOUR_DAY]),  # 1 April's end: 1 May was future then
        (LABOUR_DAY + timedelta(hours=1), []),  # recorded already (1 April's run ended after it)
        (None, []),  # nothing recorded before: the first fire (the drop may predate the schedule)
    ],
)
def test_the_next_fire_records_the_drops_before_it_the_history_lacks(
    recorded: datetime | None, expected: list[datetime]
) -> None:
    next_after, claim = _payroll_claim(JUNE_1)
    asked: list[Claim] = []

    def recorded_until(c: Claim) -> datetime | None:
        asked.append(c)
        return recorded

    plan = with_holidays(FirePlan(datetime(2026, 7, 1, 7, tzinfo=UTC)), next_after, claim, JUNE_1, recorded_until)
    assert [t for t, _ in plan.skipped] == expected
    assert asked == [claim]
