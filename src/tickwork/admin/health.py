"""Per-schedule health: one state and a reason in words, computed from what the store already
keeps (the schedule row and its recent runs) and the database clock. See docs/observability.md.

The state is the first of these that holds:

* ``parked``: a node could not handle the schedule (``fault`` is set); it fires no more
* ``paused``: the schedule is disabled (its reason says by whom, until when and why, when it
  was paused with a note); paused by tickwork after ``pause_after_failures``, it is also alerting
* ``overdue``: its next fire passed more than ``overdue_margin`` ago and no node claimed it
  (its nodes are down, or too busy); a skipped fire is recorded and moves the next fire on, so
  it does not count
* ``stuck``: its latest hand-off (Celery, RQ, Dramatiq) was not reported started by any worker
  within the executor's ``pickup_timeout`` (the run's row says so: the executors' maintenance
  step marks it), whether or not later fires were skipped behind it
* ``failing``: its last ``max_failures`` or more finished runs failed or timed out in a row
  (the count is the whole streak since the last success, not only the recent runs read)
* ``late``: a run is in progress for longer than ``late_factor`` times the median of its recent
  successful runs plus ``overdue_margin``; or its latest fires were skipped because its previous
  hand-off is still not final (a task running longer than the schedule's period)
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
    HANDOFF_BLOCKED,
    HANDOFF_OPEN,
    HANDOFF_STUCK,
    PAUSED_BY_TICKWORK,
    Health,
    HealthChange,
    Pause,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleHealth,
    ScheduleState,
    handoff_stuck,
    iso_z,
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

#: Runs read per schedule: the window of the usual duration. A window holding no success is
#: not the whole failure streak: :func:`health_of` then counts the streak's rest in the store.
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


def _pause_words(pause: Pause | None, zone: str) -> str:
    """``paused by ana at ... until ...: "the note"`` (times in the schedule's zone, UTC beside),
    or ``disabled`` for a schedule disabled without a pause (``jobs disable``, ``enabled = false``)."""
    if pause is None:
        return "disabled"
    words = "paused"
    if pause.by:
        words += f" by {pause.by}"
    if pause.at is not None:
        words += f" at {local_time(pause.at, zone)}"
    words += " until resumed" if pause.until is None else f" until {local_time(pause.until, zone)}"
    return f"{words}: {pause.note}" if pause.note else words


def streak_of(recent: Sequence[RunRecord]) -> tuple[int, bool]:
    """The failed or timed-out runs in a row at the head of ``recent`` (latest first), and
    whether a success ended the streak within them (else it may go on beyond the window)."""
    failures = 0
    for run in recent:
        if run.status in FAILING:
            failures += 1
        elif run.status is RunStatus.SUCCEEDED:
            return failures, True
        # running, skipped and abandoned runs neither break nor extend the streak
    return failures, False


def _blocked(run: RunRecord) -> bool:
    return run.status is RunStatus.SKIPPED and (run.error or "").startswith(HANDOFF_BLOCKED)


def _handoff_verdict(schedule: Schedule, recent: Sequence[RunRecord]) -> tuple[Health, str] | None:
    """``stuck`` or ``late`` from the hand-off at the head of the history: the fires skipped
    behind a hand-off that is not final count against health (a skip alone would not)."""
    skipped = passed = 0
    for run in recent:
        # A fire being claimed right now is ``running`` until its executor checks the previous
        # hand-off: looked past, or a probe would see the schedule healthy for that instant.
        if run.status is not RunStatus.RUNNING and not _blocked(run):
            break
        passed += 1
        skipped += run.status is RunStatus.SKIPPED
    later = "" if not skipped else f"; {skipped}{'+' if passed == len(recent) else ''} later fire(s) skipped behind it"
    release = f"; tickwork jobs release {schedule.name} releases it"
    behind = recent[passed] if passed < len(recent) else None
    if behind is not None and handoff_stuck(behind.status, behind.error):
        since = "" if behind.finished_at is None else f" handed off at {iso_z(behind.finished_at)},"
        said = _one_line((behind.error or "")[len(HANDOFF_STUCK) :], width=400)
        return Health.STUCK, f"run {behind.id}{since} {said}{later}{release}"
    latest_skip = next((run for run in recent[:passed] if _blocked(run)), None)
    if behind is None and latest_skip is not None and f"; {HANDOFF_STUCK}" in (latest_skip.error or ""):
        # Every run of the window is a skip: the latest one says what blocked it.
        return Health.STUCK, f"{_one_line(latest_skip.error, width=400)}{later}{release}"
    if skipped and (behind is None or behind.status in HANDOFF_OPEN):
        latest = next(run for run in recent if _blocked(run))
        return Health.LATE, _one_line(latest.error) + later
    return None


def assess(
    schedule: Schedule,
    recent: Sequence[RunRecord],
    last_success: RunRecord | None,
    last_failure: RunRecord | None,
    now: datetime,
    policy: HealthPolicy,
    streak: int | None = None,
) -> ScheduleHealth:
    """The health of ``schedule`` from its ``recent`` runs (latest first), its latest successful
    and failed runs (``None``: none recorded) and ``now`` by the database clock. ``streak``: the
    failed runs since the latest success, counted in the store (``None``: counted in ``recent``)."""
    failures = streak_of(recent)[0] if streak is None else streak
    durations = [
        (run.finished_at - run.started_at).total_seconds()
        for run in recent
        if run.status is RunStatus.SUCCEEDED and run.started_at is not None and run.finished_at is not None
    ]
    usual = statistics.median(durations) if durations else None

    def verdict(state: Health, reason: str, alerting: bool | None = None) -> ScheduleHealth:
        return ScheduleHealth(
            state,
            reason,
            last_success=None if last_success is None else _ended(last_success),
            last_failure=None if last_failure is None else _ended(last_failure),
            consecutive_failures=failures,
            usual_duration=usual,
            alerting=state.alerting if alerting is None else alerting,
            pause=schedule.pause if state is Health.PAUSED else None,
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
        pause = schedule.pause
        # Paused on purpose (by a person, a sync) it needs nobody; paused by tickwork because
        # it kept failing, it does.
        by_tickwork = pause is not None and pause.by == PAUSED_BY_TICKWORK
        return verdict(Health.PAUSED, f"{_pause_words(pause, zone)}; {summary}", alerting=by_tickwork)
    if is_overdue(True, schedule.state, schedule.next_fire, now, policy.overdue_margin):
        assert schedule.next_fire is not None  # overdue only with one
        reason = (
            f"the fire due at {local_time(schedule.next_fire, zone)} was not run within "
            f"{policy.overdue_margin.total_seconds():g}s; {summary}"
        )
        return verdict(Health.OVERDUE, reason)
    handoff = _handoff_verdict(schedule, recent)
    if handoff is not None and handoff[0] is Health.STUCK:
        return verdict(*handoff)
    if failures >= policy.max_failures:
        # The streak is counted in the store: its latest failure may be older than the recent
        # runs read (skipped fires after it), and then ``last_failure`` is it.
        latest = next((run for run in recent if run.status in FAILING), last_failure)
        times = "1 failure" if failures == 1 else f"{failures} failures in a row"
        reason = f"{times}, {_since_success(last_success, zone)}"
        if latest is not None:
            reason += f"; last: {latest.status.value}"
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
    if handoff is not None:
        return verdict(*handoff)
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
    streaks = _long_streaks(store, schedules, recent, successes)
    return {
        s.id: assess(s, recent.get(s.id, []), successes.get(s.id), failures.get(s.id), now, policy, streaks.get(s.id))
        for s in schedules
    }


def _long_streaks(
    store: Store, schedules: Sequence[Schedule], recent: dict[int, list[RunRecord]], successes: dict[int, RunRecord]
) -> dict[int, int]:
    """The whole failure streak of the schedules whose recent window holds no success and is
    full (the streak may go on before it): counted in the store, one indexed count each. The
    others' streak is in their window."""
    out: dict[int, int] = {}
    for schedule in schedules:
        runs = recent.get(schedule.id, [])
        if len(runs) >= RECENT_RUNS and not streak_of(runs)[1]:
            out[schedule.id] = store.count_failures_since(schedule, successes.get(schedule.id))
    return out


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
