"""The summary strip above the schedules list: schedules by health, runs and failures in the last
hour, live nodes; and the attempts of one fire grouped into one row.

A schedule's health is read here from the :class:`~tickwork.admin.info.ScheduleInfo` fields that
exist today (:func:`health_of`, by the rules of :mod:`tickwork.admin.health` that the schedule
row alone decides) and, for *late*, from the admin API's health of the running ones. The strip
counts without reading every schedule, so it stays cheap on a large store: *parked*, *failing*
and *paused* are SQL counts of the admin API (*parked* on the stored fault, as the admin API's
health decides it: every parked schedule, whether its last run failed or succeeded), *overdue*
walks the head of the list sorted by next fire (the late ones come first), stopping at the first
schedule that is not overdue, or at :data:`MOST` (shown as ``1000+``). Each schedule counts once,
in the state :func:`health_of` gives it (a parked schedule whose last run failed is parked, an
overdue one whose last run failed is overdue, as in the admin API's health).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tickwork.admin import Admin
from tickwork.admin.health import HealthPolicy, is_overdue
from tickwork.admin.info import ScheduleInfo
from tickwork.structures import FAILING, RunRecord, RunStatus, ScheduleState

#: The health states the strip counts, in the order it shows them.
HEALTH = ("failing", "overdue", "late", "paused", "parked")
#: An idle, enabled schedule whose next fire is this far in the past is overdue: no node has
#: claimed it (none live, none owning its bucket, or all busy). The default of
#: ``[health] overdue_margin``; the strip uses the configured one (``Admin.health_policy``).
OVERDUE_AFTER = HealthPolicy().overdue_margin
#: The window of "runs in the last hour".
RECENT = timedelta(hours=1)
#: Rows read per query while walking the list, and the most overdue or late ones counted.
PAGE = 200
MOST = 1000


def _is_overdue(info: ScheduleInfo, now: datetime, margin: timedelta) -> bool:
    return is_overdue(info.enabled, info.state, info.next_fire, now, margin)


def health_of(info: ScheduleInfo, now: datetime, margin: timedelta = OVERDUE_AFTER) -> str:
    """One schedule's health for the strip at ``now``: ``parked``, ``paused``, ``overdue``,
    ``failing`` or ``healthy`` (``late`` needs its history: :func:`_late` reads the admin API's).
    The rules of :mod:`tickwork.admin.health` that the schedule row alone decides."""
    if info.fault is not None:
        return "parked"
    if not info.enabled:
        return "paused"
    if _is_overdue(info, now, margin):
        return "overdue"
    return "failing" if info.last_status in FAILING else "healthy"


def _overdue(admin: Admin, now: datetime) -> int:
    """Enabled idle schedules due more than ``[health] overdue_margin`` ago: the head of the list."""
    margin = admin.health_policy.overdue_margin
    count = offset = 0
    while count < MOST:
        page = admin.list(enabled=True, state=ScheduleState.IDLE, limit=PAGE, offset=offset)
        overdue = [info for info in page if _is_overdue(info, now, margin)]
        count += sum(1 for info in overdue if health_of(info, now, margin) == "overdue")
        if len(overdue) < len(page) or len(page) < PAGE:
            break
        offset += PAGE
    return min(count, MOST)


def _late(admin: Admin, now: datetime) -> int:
    """Running schedules whose run has gone on longer than usual: only running ones can be."""
    page = admin.list(state=ScheduleState.RUNNING, limit=MOST)
    return sum(1 for info in page if info.health is not None and info.health.state.value == "late")


def health_counts(admin: Admin, now: datetime) -> dict[str, int]:
    """How many schedules are in each of :data:`HEALTH` (see the module's docstring)."""
    return {
        "failing": admin.count(enabled=True, failing=True, parked=False),
        "overdue": _overdue(admin, now),
        "late": _late(admin, now),
        "paused": admin.count(enabled=False, parked=False),
        "parked": admin.count(parked=True),
    }


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
    since = now - RECENT
    last_hour = [r for r in recent if r.scheduled_for >= since and r.status is not RunStatus.SKIPPED]
    nodes = admin.nodes()
    return Summary(
        health=health_counts(admin, now),
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
