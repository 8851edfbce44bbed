"""Per-schedule health: one state and a reason in words, computed from what the store already
keeps (the schedule row and its recent runs) and the database clock. See docs/observability.md.

The state is the first of these that holds:

* ``parked``: a node could not handle the schedule (``fault`` is set); it fires no more
* ``paused``: the schedule is disabled
* ``overdue``: its next fire passed more than ``overdue_margin`` ago and no node claimed it
  (its nodes are down, or too busy); a skipped fire is recorded and moves the next fire on, so
  it does not count
* ``failing``: its last ``max_failures`` or more finished runs failed or timed out in a row
* ``late``: a run is in progress for longer than ``late_factor`` times the median of its recent
  successful runs plus ``overdue_margin``
* ``healthy``: none of these
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..abc import Store
from ..config.files import Config
from ..scheduling.localtime import local_time
from ..structures import (
    FAILING,
    Health,
    HealthChange,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleHealth,
    ScheduleState,
)

__all__ = [
    "RECENT_RUNS",
    "Health",
    "HealthChange",
    "HealthPolicy",
    "ScheduleHealth",
    "assess",
    "health_of",
    "is_overdue",
]

#: Runs read per schedule: the window of consecutive failures and of the usual duration.
RECENT_RUNS = 20


@dataclass(frozen=True)
class HealthPolicy:
    """The thresholds of the health states.

    :param max_failures: this many failed runs in a row make a schedule ``failing``
    :param overdue_margin: how long a next fire may pass unclaimed before the schedule is
        ``overdue``; also the slack added to the usual duration before a run is ``late``
    :param late_factor: a run is ``late`` past this many times the usual duration (plus the margin)
    """

    max_failures: int = 1
    overdue_margin: timedelta = timedelta(seconds=60)
    late_factor: float = 2.0

    @classmethod
    def of(cls, config: Config) -> HealthPolicy:
        """The thresholds of a configuration's ``[health]`` table."""
        health = config.health
        return cls(
            max_failures=health.max_failures,
            overdue_margin=timedelta(seconds=health.overdue_margin),
            late_factor=health.late_factor,
        )

    def __post_init__(self) -> None:
        if self.max_failures < 1:
            raise ValueError(f"max_failures: must be >= 1, got {self.max_failures}")
        if self.overdue_margin < timedelta(0):
            raise ValueError(f"overdue_margin: must be >= 0, got {self.overdue_margin}")
        if self.late_factor < 1:
            raise ValueError(f"late_factor: must be >= 1, got {self.late_factor}")


def is_overdue(
    enabled: bool, state: ScheduleState, next_fire: datetime | None, now: datetime, margin: timedelta
) -> bool:
    """Whether a schedule is ``overdue``: enabled, idle, and its next fire passed more than
    ``margin`` ago unclaimed. Read from the schedule row alone (the dashboard's strip counts by it
    without reading histories)."""
    return enabled and state is ScheduleState.IDLE and next_fire is not None and now - next_fire > margin


def _ended(run: RunRecord) -> datetime:
    return run.finished_at or run.started_at or run.scheduled_for


def _since_success(last_success: RunRecord | None, timezone: str) -> str:
    # An absolute time, not "3m ago": a reason read twice is the same text (and compares equal).
    # In the schedule's zone with UTC beside it, whole seconds: what its expression means.
    return (
        "never succeeded" if last_success is None else f"last success at {local_time(_ended(last_success), timezone)}"
    )


def _one_line(text: str | None, width: int = 120) -> str:
    """The first line of an error (its exception; the traceback follows it), cut to ``width``."""
    lines = (text or "").strip().splitlines()
    first = lines[0].strip() if lines else ""
    return first if len(first) <= width else first[: width - 3] + "..."


def assess(
    schedule: Schedule,
    recent: Sequence[RunRecord],
    last_success: RunRecord | None,
    last_failure: RunRecord | None,
    now: datetime,
    policy: HealthPolicy,
) -> ScheduleHealth:
    """The health of ``schedule`` from its ``recent`` runs (latest first), its latest successful
    and failed runs (``None``: none recorded) and ``now`` by the database clock."""
    failures = 0
    for run in recent:
        if run.status in FAILING:
            failures += 1
        elif run.status is RunStatus.SUCCEEDED:
            break
        # running, skipped and abandoned runs neither break nor extend the streak
    durations = [
        (run.finished_at - run.started_at).total_seconds()
        for run in recent
        if run.status is RunStatus.SUCCEEDED and run.started_at is not None and run.finished_at is not None
    ]
    usual = statistics.median(durations) if durations else None

    def verdict(state: Health, reason: str) -> ScheduleHealth:
        return ScheduleHealth(
            state,
            reason,
            last_success=None if last_success is None else _ended(last_success),
            last_failure=None if last_failure is None else _ended(last_failure),
            consecutive_failures=failures,
            usual_duration=usual,
        )

    zone = schedule.spec.timezone
    if last_success is not None:
        summary = _since_success(last_success, zone)
    else:
        summary = "no runs yet" if not recent else "never succeeded"
    spec = schedule.spec
    if schedule.fault is not None:
        return verdict(Health.PARKED, f"a node could not handle it: {_one_line(schedule.fault)}")
    if not spec.enabled:
        return verdict(Health.PAUSED, f"disabled; {summary}")
    if is_overdue(True, schedule.state, schedule.next_fire, now, policy.overdue_margin):
        assert schedule.next_fire is not None  # overdue only with one
        reason = (
            f"the fire due at {local_time(schedule.next_fire, zone)} was not run within "
            f"{policy.overdue_margin.total_seconds():g}s; {summary}"
        )
        return verdict(Health.OVERDUE, reason)
    if failures >= policy.max_failures:
        latest = next(run for run in recent if run.status in FAILING)
        times = "1 failure" if failures == 1 else f"{failures} failures in a row"
        reason = f"{times}, {_since_success(last_success, zone)}; last: {latest.status.value}"
        if latest.error:
            reason += f": {_one_line(latest.error)}"
        return verdict(Health.FAILING, reason)
    running = next((run for run in recent if run.status is RunStatus.RUNNING and run.started_at is not None), None)
    if schedule.state is ScheduleState.RUNNING and running is not None and usual is not None:
        started = running.started_at
        assert started is not None  # picked for having one
        elapsed = (now - started).total_seconds()
        allowed = policy.late_factor * usual + policy.overdue_margin.total_seconds()
        if elapsed > allowed:
            reason = f"running for {elapsed:.0f}s on {running.node}, usually {usual:.1f}s (allowed {allowed:.0f}s)"
            return verdict(Health.LATE, reason)
    return verdict(Health.HEALTHY, summary)


def health_of(
    store: Store, schedules: Sequence[Schedule], policy: HealthPolicy | None = None
) -> dict[int, ScheduleHealth]:
    """The health of each of ``schedules`` (by id): a few indexed reads per schedule, so call it
    for the page shown, never for every stored schedule at once."""
    policy = policy or HealthPolicy()
    if not schedules:
        return {}
    now = store.now()
    recent = store.recent_runs(schedules, limit=RECENT_RUNS)
    # The latest success and failure are usually in the recent window; read them apart only
    # for the schedules where they are not (one more indexed read each).
    successes = _latest(store, schedules, recent, [RunStatus.SUCCEEDED])
    failures = _latest(store, schedules, recent, sorted(FAILING))
    return {
        s.id: assess(s, recent.get(s.id, []), successes.get(s.id), failures.get(s.id), now, policy) for s in schedules
    }


def _latest(
    store: Store, schedules: Sequence[Schedule], recent: dict[int, list[RunRecord]], status: Sequence[RunStatus]
) -> dict[int, RunRecord]:
    found: dict[int, RunRecord] = {}
    missing: list[Schedule] = []
    for schedule in schedules:
        runs = recent.get(schedule.id, [])
        hit = next((run for run in runs if run.status in status), None)
        if hit is not None:
            found[schedule.id] = hit
        elif len(runs) >= RECENT_RUNS:  # fewer: the window already holds the whole history
            missing.append(schedule)
    if missing:
        for schedule_id, runs in store.recent_runs(missing, limit=1, status=status).items():
            if runs:
                found[schedule_id] = runs[0]
    return found
