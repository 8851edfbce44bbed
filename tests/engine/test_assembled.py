"""The per-fire constructors that skip a frozen dataclass's __init__ build what __init__ builds."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta

import pytest

from tickwork.engine.planning import FirePlan, plan_next_fire
from tickwork.plugin.runcontext import RunContext
from tickwork.structures import Claim, JobCall, MisfirePolicy, ScheduleSpec

SPEC = ScheduleSpec("backup", "cron", "0 * * * *", "myapp.jobs:backup", arguments={"to": "s3"})
DUE = datetime(2026, 11, 24, 16, 0, tzinfo=UTC)


def stored_claim(run_id: int | None = 41) -> Claim:
    return Claim.stored(
        schedule_id=7, spec=SPEC, scheduled_for=DUE, claim_seq=3, claimed_at=DUE - timedelta(seconds=1), run_id=run_id
    )


def test_a_stored_claim_equals_the_checked_one_and_stays_frozen() -> None:
    claim = stored_claim()
    assert claim == Claim(7, SPEC, DUE, 3, DUE - timedelta(seconds=1), 41)
    assert claim.attempt == 1 and claim.early
    with pytest.raises(FrozenInstanceError):
        claim.run_id = 1  # type: ignore[misc]


def test_the_call_for_a_claim_equals_the_one_built_field_by_field() -> None:
    call = JobCall.for_claim(stored_claim(), timeout=30.0, node_id="n1")
    assert call == JobCall(
        run_id=41,
        schedule="backup",
        scheduled_for=DUE,
        target="myapp.jobs:backup",
        arguments={"to": "s3"},
        timeout=30.0,
        attempt=1,
        node_id="n1",
    )
    # Each call gets its own options, as the default factory gives.
    assert call.options == {} and call.options is not JobCall.for_claim(stored_claim(), timeout=1, node_id="n").options
    with pytest.raises(FrozenInstanceError):
        call.timeout = 1.0  # type: ignore[misc]


def test_run_context_of_a_call_equals_the_checked_one_and_still_checks() -> None:
    call = JobCall.for_claim(stored_claim(), timeout=30.0, node_id="n1")
    assert RunContext.of(call) == RunContext("backup", DUE, 41, 1, "n1")
    naive = JobCall(run_id=1, schedule="s", scheduled_for=datetime(2026, 1, 1), target="m:f", arguments={}, timeout=1)
    with pytest.raises(ValueError, match="scheduled_for: datetime must be timezone-aware"):
        RunContext.of(naive)
    zeroth = JobCall(run_id=1, schedule="s", scheduled_for=DUE, target="m:f", arguments={}, timeout=1, attempt=0)
    with pytest.raises(ValueError, match="attempt: must be >= 1, got 0"):
        RunContext.of(zeroth)


def test_a_fire_plan_equals_the_checked_one_and_stays_frozen() -> None:
    hourly = lambda after: after.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)  # noqa: E731
    plan = plan_next_fire(
        hourly,
        scheduled_for=DUE,
        claimed_at=DUE,
        now=DUE + timedelta(hours=2, minutes=5),
        policy=MisfirePolicy.SKIP,
        grace=30.0,
    )
    assert plan == FirePlan(
        DUE + timedelta(hours=3),
        (
            (DUE + timedelta(hours=1), "due while the previous run was still active"),
            (DUE + timedelta(hours=2), "due while the previous run was still active"),
        ),
    )
    with pytest.raises(FrozenInstanceError):
        plan.next_fire = None  # type: ignore[misc]
