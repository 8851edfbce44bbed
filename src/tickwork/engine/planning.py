"""Fire planning: pure functions of a schedule's trigger, its times and the policy.

Nothing here touches a store, a thread or a clock: the engine passes "now" in (Procrastinate's
``periodic.py`` style, with ``at=`` parameters), so every rule is unit-tested on its own
(tests/engine/test_planning.py). Rules: docs/deployment-sync.md#skips and docs/cluster.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..structures import MAX_RETRIES, Claim, MisfirePolicy, ScheduleSpec, assembled
from .settings import MAX_SKIPPED_RECORDS

#: Longest wait before a retry, in seconds (a day). At most MAX_RETRIES retries are planned,
#: whatever a stored row says (rows written before these limits existed).
MAX_RETRY_DELAY = 86400.0

NextAfter = Callable[[datetime], datetime | None]
#: When the history last recorded a fire of a claim's schedule before the claim's fire
#: (``None``: it recorded none), asked only when it matters
#: (:func:`tickwork.engine.holidayrows.recorded_until`).
RecordedUntil = Callable[[Claim], datetime | None]
#: The dropped fire times a fire's end records: ``(scheduled_for, next_fire, now, recorded_until,
#: limit)`` (:meth:`tickwork.scheduling.firetimes.FireTimes.due_drops`).
DueDrops = Callable[
    [datetime, datetime | None, datetime, Callable[[], datetime | None], int], list[tuple[datetime, str]]
]


class LastAnswer:
    """A trigger's ``next_after`` that remembers its last answer. The schedules sharing a trigger
    and a fire time (a fleet of midnight jobs, a burst) end one after another and ask it the same
    question in turn (a burst of 30,000 no-op runs: 3 % of a node's engine thread was cron
    searches for one answer). Not thread-safe: one per engine loop."""

    __slots__ = ("_after", "_answer", "_next_after", "due_drops")

    def __init__(self, next_after: NextAfter, due_drops: DueDrops | None = None) -> None:
        self._next_after = next_after
        self._after: datetime | None = None
        self._answer: datetime | None = None
        #: The fires its holiday rule dropped that a fire's end records (``None``: a schedule
        #: without ``holidays``).
        self.due_drops = due_drops

    def __call__(self, after: datetime) -> datetime | None:
        if after != self._after:
            # Both set only once the search returned: a search that raised leaves no answer.
            answer = self._next_after(after)
            self._after, self._answer = after, answer
        return self._answer


@dataclass(frozen=True)
class FirePlan:
    """What follows a fire: the schedule's next fire time (``None``: never again) and the fire
    times passed over meanwhile, each with the reason recorded in the history."""

    next_fire: datetime | None
    skipped: tuple[tuple[datetime, str], ...] = ()


def plan_next_fire(
    next_after: NextAfter,
    *,
    scheduled_for: datetime,
    claimed_at: datetime,
    now: datetime,
    policy: MisfirePolicy,
    grace: float,
    max_skipped: int = MAX_SKIPPED_RECORDS,
    max_catchup: int | None = None,
) -> FirePlan:
    """The next fire after a fire of ``scheduled_for`` claimed at ``claimed_at`` ends at ``now``.

    Fire times at or before ``now`` are passed over and recorded (at most ``max_skipped``; a longer
    gap is jumped without recording every time), except that policy ``all`` keeps those within
    ``grace`` seconds of ``now`` to run them: at most ``max_catchup`` of them (the latest), the
    older ones passed over and recorded too.
    """
    floor = now - timedelta(seconds=grace) if policy is MisfirePolicy.ALL else now
    late = (claimed_at - scheduled_for).total_seconds()
    skipped: list[tuple[datetime, str]] = []
    nxt = next_after(scheduled_for)
    while nxt is not None and nxt <= floor and len(skipped) < max_skipped:
        if nxt > claimed_at:
            reason = "due while the previous run was still active"
        elif late <= grace:
            reason = f"passed before the previous fire was claimed ({late:.1f}s late)"
        else:
            reason = f"missed: no node ran it in time (misfire policy {policy.value})"
        skipped.append((nxt, reason))
        nxt = next_after(nxt)
    if nxt is not None and nxt <= floor:
        nxt = next_after(floor)
    if policy is MisfirePolicy.ALL and max_catchup is not None:
        nxt = _capped(next_after, nxt, now, max_catchup, skipped, max_skipped)
    # Built without the frozen dataclass's __init__: one per fire (structures.assembled).
    return assembled(FirePlan, {"next_fire": nxt, "skipped": tuple(skipped)})


def with_holidays(
    plan: FirePlan,
    next_after: NextAfter,
    claim: Claim,
    now: datetime,
    recorded_until: RecordedUntil,
    max_skipped: int = MAX_SKIPPED_RECORDS,
) -> FirePlan:
    """``plan`` with the fire times the schedule's holiday rule dropped around ``claim``'s fire
    whose time has come by ``now`` (the database clock) added to its skipped
    ones, in time order: those passed since it, and those before it the history has not recorded
    (``recorded_until``; docs/holidays.md#when-the-skipped-rows-are-written). Never a future
    time. ``plan`` itself for a schedule without ``holidays``."""
    due_drops = next_after.due_drops if isinstance(next_after, LastAnswer) else None
    if due_drops is None:
        return plan
    room = max_skipped - len(plan.skipped)
    if room <= 0:
        return plan
    found = due_drops(claim.scheduled_for, plan.next_fire, now, lambda: recorded_until(claim), room)
    if not found:
        return plan
    return FirePlan(plan.next_fire, tuple(sorted((*plan.skipped, *found), key=lambda item: item[0])))


def _capped(
    next_after: NextAfter,
    nxt: datetime | None,
    now: datetime,
    max_catchup: int,
    skipped: list[tuple[datetime, str]],
    max_skipped: int,
) -> datetime | None:
    """The first of the due fires from ``nxt`` that policy ``all`` replays when at most
    ``max_catchup`` may be: the older ones are added to ``skipped``. Keeps a window of the last
    ``max_catchup`` due fires, so a long gap costs one pass over it."""
    reason = f"missed: beyond max_catchup {max_catchup} (misfire policy all)"
    window: list[datetime] = []
    while nxt is not None and nxt <= now:
        window.append(nxt)
        if len(window) > max_catchup:
            passed = window.pop(0)
            if len(skipped) < max_skipped:
                skipped.append((passed, reason))
        nxt = next_after(nxt)
    return window[0] if window else nxt


def misfire_reason(
    *, scheduled_for: datetime, starting_at: datetime, attempt: int, policy: MisfirePolicy, grace: float
) -> str | None:
    """Why a fire about to start at ``starting_at`` (database clock) must not run, or ``None``.

    Only a first attempt can misfire; policy ``once`` runs however late. ``starting_at`` is when
    it starts, not when it was claimed: a fire claimed ahead and held by a node that then could not
    start it (unhealthy membership) is as late as its start."""
    late = (starting_at - scheduled_for).total_seconds()
    if attempt != 1 or late <= grace or policy is MisfirePolicy.ONCE:
        return None
    return f"missed by {late:.1f}s (misfire policy {policy.value}, grace {grace:g}s)"


def grace_of(spec: ScheduleSpec, default: float) -> float:
    """Seconds a fire of ``spec`` may be late and still run: its own ``misfire_grace``, else the
    node's ``default``."""
    return default if spec.misfire_grace is None else spec.misfire_grace.total_seconds()


def retry_delay(backoff: float, attempt: int) -> float:
    """Seconds before retrying a failed ``attempt``: ``backoff * 2^(attempt-1)``, at most
    :data:`MAX_RETRY_DELAY` (no overflow whatever the attempt number)."""
    if not backoff > 0:
        return 0.0
    exponent = min(max(attempt - 1, 0), 64)
    delay = backoff * float(2**exponent)
    return MAX_RETRY_DELAY if not math.isfinite(delay) else min(delay, MAX_RETRY_DELAY)


def plan_retry(
    next_after: NextAfter,
    *,
    scheduled_for: datetime,
    attempt: int,
    retries: int,
    backoff: float,
    now: datetime,
) -> float | None:
    """The delay before retrying failed ``attempt``, or ``None`` for no retry: none left (at most
    :data:`MAX_RETRIES`), or it would start at or after the next fire (a retry never overlaps it)."""
    if attempt > min(retries, MAX_RETRIES):
        return None
    delay = retry_delay(backoff, attempt)
    following = next_after(scheduled_for)
    if following is not None and now + timedelta(seconds=delay) >= following:
        return None
    return delay
