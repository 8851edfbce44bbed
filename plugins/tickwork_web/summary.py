"""The summary strip above the schedules list: schedules by health, runs and failures in the last
hour, live nodes; and the attempts of one fire grouped into one row.

A schedule's health is read here from the :class:`~tickwork.admin.info.ScheduleInfo` fields that
exist today (:func:`health_of`): when the admin API gains a health of its own, only that
function changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tickwork.admin import Admin
from tickwork.admin.info import ScheduleInfo
from tickwork.structures import FAILING, RunRecord, RunStatus, ScheduleState

#: The health states the strip counts, in the order it shows them.
HEALTH = ("failing", "late", "paused", "parked", "healthy")
#: An idle, enabled schedule whose next fire is this far in the past is late: no node has
#: claimed it (none live, or all busy). A node claims a due schedule within its max_sleep.
LATE_AFTER = timedelta(seconds=60)
#: The window of "runs in the last hour".
RECENT = timedelta(hours=1)
#: Rows read per page while counting the schedules by health.
PAGE = 1000


def health_of(info: ScheduleInfo, now: datetime) -> str:
    """One of :data:`HEALTH` for a schedule, from its stored state and its last run."""
    if info.fault is not None:
        return "parked"
    if not info.enabled:
        return "paused"
    if info.last_status in FAILING:
        return "failing"
    if info.state is ScheduleState.IDLE and info.next_fire is not None and now - info.next_fire > LATE_AFTER:
        return "late"
    return "healthy"


@dataclass(frozen=True)
class Summary:
    """What the strip shows. ``runs_capped``: more runs than were counted (the count is a floor)."""

    health: dict[str, int]
    runs: int
    failures: int
    runs_capped: bool
    live_nodes: int
    nodes: int


def summary(admin: Admin, now: datetime, recent: list[RunRecord], capped: bool) -> Summary:
    """The strip's numbers; ``recent``: runs scheduled within :data:`RECENT` or more (any order)."""
    counts = dict.fromkeys(HEALTH, 0)
    offset = 0
    while True:  # every schedule once, a page at a time (health is per row, see health_of)
        page = admin.list(limit=PAGE, offset=offset)
        for info in page:
            counts[health_of(info, now)] += 1
        if len(page) < PAGE:
            break
        offset += PAGE
    since = now - RECENT
    last_hour = [r for r in recent if r.scheduled_for >= since and r.status is not RunStatus.SKIPPED]
    nodes = admin.nodes()
    return Summary(
        health=counts,
        runs=len(last_hour),
        failures=sum(1 for r in last_hour if r.status in FAILING),
        runs_capped=capped,
        live_nodes=sum(1 for n in nodes if n.live),
        nodes=len(nodes),
    )


@dataclass(frozen=True)
class Fire:
    """One fire time of one schedule with all its recorded attempts, the latest first."""

    attempts: list[RunRecord]

    @property
    def latest(self) -> RunRecord:
        return self.attempts[0]

    @property
    def first(self) -> RunRecord:
        return self.attempts[-1]

    @property
    def errors(self) -> list[RunRecord]:
        """The attempts that recorded an error, the earliest first (the order they happened)."""
        return [r for r in reversed(self.attempts) if r.error]


def fires(records: Iterable[RunRecord]) -> list[Fire]:
    """Group runs by (schedule, scheduled time), keeping the order of the first of each group.
    The history lists the attempts of one fire together (latest attempt first), so grouping
    adjacent rows is enough; a fire cut by the row limit shows the attempts that were read."""
    out: list[Fire] = []
    for record in records:
        if out and (out[-1].latest.schedule, out[-1].latest.scheduled_for) == (record.schedule, record.scheduled_for):
            out[-1].attempts.append(record)
        else:
            out.append(Fire([record]))
    for fire in out:
        fire.attempts.sort(key=lambda r: r.attempt, reverse=True)
    return out
