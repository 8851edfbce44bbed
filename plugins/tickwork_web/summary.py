"""The summary strip above the schedules list: schedules by health, runs and failures in the last
hour, live nodes; and the attempts of one fire grouped into one row.

A schedule's health is read here from the :class:`~tickwork.admin.info.ScheduleInfo` fields that
exist today (:func:`health_of`, :func:`is_late`). The strip counts without reading every
schedule, so it stays cheap on a large store: *failing* and *paused* are SQL counts of the admin
API, *late* walks the head of the list sorted by next fire (the late ones come first) and
*parked* the tail of the failing ones (a parked schedule has no next fire, so it comes last, and
parking records a failed run), each walk stopping at the first schedule that is not one, or at
:data:`MOST` (shown as ``1000+``). Walking the tail of all schedules instead costs a deep OFFSET
(half a second at 100,000 on SQLite, at every refresh); the price is that a schedule parked after
a run that succeeded (its next fire could not be computed) is not counted as parked. The admin
API's own health, when it comes, replaces these walks. Each schedule
counts once, in the state :func:`health_of` gives it (a parked schedule whose last run failed is
parked, a late one whose last run failed is failing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tickwork.admin import Admin
from tickwork.admin.info import ScheduleInfo
from tickwork.structures import FAILING, RunRecord, RunStatus, ScheduleState

#: The health states the strip counts, in the order it shows them.
HEALTH = ("failing", "late", "paused", "parked")
#: An idle, enabled schedule whose next fire is this far in the past is late: no node has
#: claimed it (none live, none owning its bucket, or all busy). A live node wakes for the next
#: due time and claims it then, so a minute past it is no scheduling jitter.
LATE_AFTER = timedelta(seconds=60)
#: The window of "runs in the last hour".
RECENT = timedelta(hours=1)
#: Rows read per query while walking the list, and the most late or parked ones counted.
PAGE = 200
MOST = 1000


def is_late(info: ScheduleInfo, now: datetime) -> bool:
    return (
        info.enabled
        and info.state is ScheduleState.IDLE
        and info.next_fire is not None
        and now - info.next_fire > LATE_AFTER
    )


def health_of(info: ScheduleInfo, now: datetime) -> str:
    """One schedule's health: ``parked``, ``paused``, ``failing``, ``late`` or ``healthy``."""
    if info.fault is not None:
        return "parked"
    if not info.enabled:
        return "paused"
    if info.last_status in FAILING:
        return "failing"
    return "late" if is_late(info, now) else "healthy"


def _late(admin: Admin, now: datetime) -> int:
    """Enabled idle schedules due more than :data:`LATE_AFTER` ago: the head of the list."""
    count = offset = 0
    while count < MOST:
        page = admin.list(enabled=True, state=ScheduleState.IDLE, limit=PAGE, offset=offset)
        late = [info for info in page if is_late(info, now)]
        count += sum(1 for info in late if health_of(info, now) == "late")
        if len(late) < len(page) or len(page) < PAGE:
            break
        offset += PAGE
    return min(count, MOST)


def _parked(admin: Admin, failing: int) -> int:
    """Enabled schedules with a fault whose last run failed: the tail of the ``failing`` ones."""
    parked = scanned = 0
    end = failing
    while end > 0 and scanned < MOST:
        start = max(0, end - PAGE)
        page = admin.list(enabled=True, failing=True, limit=end - start, offset=start)
        parked += sum(1 for info in page if info.fault is not None)
        scanned += len(page)
        if any(info.next_fire is not None for info in page):
            break
        end = start
    return min(parked, MOST)


def health_counts(admin: Admin, now: datetime) -> dict[str, int]:
    """How many schedules are in each of :data:`HEALTH` (see the module's docstring)."""
    failing = admin.count(enabled=True, failing=True)
    parked = _parked(admin, failing)
    return {
        "failing": failing - parked,
        "late": _late(admin, now),
        "paused": admin.count(enabled=False),
        "parked": parked,
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
