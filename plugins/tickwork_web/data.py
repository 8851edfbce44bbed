"""What the pages and the API show, read through the admin API in one request thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tickwork.admin import Admin
from tickwork.admin.info import NodeInfo, ScheduleInfo
from tickwork.plugin.assembly import build_membership
from tickwork.scheduling.options import Shown, shown
from tickwork.structures import BUCKETS, FAILING, RunRecord, RunStatus, ScheduleVersion, iso_z

from .charts import Chart, chart, window_of
from .memo import Memo
from .queries import RunFilter, ScheduleFilter
from .summary import RECENT, Fire, Summary, fires, summary
from .words import describe

#: Rows of history on a schedule's page (attempts, grouped by fire), and skipped fire times there.
HISTORY_ROWS = 100
SKIPPED_ROWS = 20
NEXT_FIRES = 10
#: The latest versions of its definition the schedule page lists.
VERSION_ROWS = 20
#: Runs a schedule's chart is drawn from (its most recent ones).
CHART_ROWS = 500
#: The overall chart's window, and the most runs read for it and for the summary strip.
OVERALL_WINDOW = timedelta(hours=24)
RECENT_ROWS = 10_000


@dataclass(frozen=True)
class SchedulePage:
    now: datetime
    total: int
    schedules: list[ScheduleInfo]
    summary: Summary | None = None


@dataclass(frozen=True)
class ScheduleDetail:
    now: datetime
    info: ScheduleInfo
    next_fires: list[datetime]
    history: list[RunRecord]
    last_error: RunRecord | None
    skipped: list[RunRecord]
    chart: Chart | None = None
    #: Why each of ``next_fires`` is not at its trigger's time (a holiday moved it), or ``""``.
    moved: list[str] = field(default_factory=list)
    #: The versions of its definition, the latest first (at most :data:`VERSION_ROWS`).
    versions: list[ScheduleVersion] = field(default_factory=list)

    @property
    def fires(self) -> list[Fire]:
        return fires(self.history)

    @property
    def options(self) -> list[Shown]:
        """The rarer options the schedule sets, as its options show them (``jobs show`` too)."""
        return shown(self.info)


@dataclass(frozen=True)
class NodeRow:
    node: NodeInfo
    in_flight: int
    buckets: int | None  # None: all of them (the membership does not partition)


def schedule_page(admin: Admin, where: ScheduleFilter, offset: int, limit: int) -> SchedulePage:
    kwargs = where.admin_kwargs()
    total = admin.count(**kwargs)  # type: ignore[arg-type]
    found = admin.list(limit=limit, offset=offset, **kwargs)  # type: ignore[arg-type]
    return SchedulePage(admin.store().now(), total, found)


def strip(admin: Admin, now: datetime) -> Summary:
    """The summary strip over all schedules."""
    recent = admin.history(since=RECENT, limit=RECENT_ROWS)
    return summary(admin, now, recent, capped=len(recent) == RECENT_ROWS)


def schedules_with_summary(
    admin: Admin, where: ScheduleFilter, offset: int, limit: int, kept: Memo[Summary]
) -> SchedulePage:
    """The schedules page: one page of schedules and the summary strip (kept a few seconds)."""
    page = schedule_page(admin, where, offset, limit)
    return SchedulePage(page.now, page.total, page.schedules, kept.get(lambda: strip(admin, page.now)))


def overall_chart(admin: Admin, now: datetime) -> Chart:
    """Runs of every schedule over the last :data:`OVERALL_WINDOW`."""
    return chart(admin.history(since=OVERALL_WINDOW, limit=RECENT_ROWS), now - OVERALL_WINDOW, now)


def schedule_detail(admin: Admin, name: str, statuses: list[RunStatus]) -> ScheduleDetail:
    info = admin.get(name)
    now = admin.store().now()
    recent = admin.history(schedule=name, limit=CHART_ROWS)
    start, end = window_of(recent, now)
    upcoming = admin.next_fires_explained(name, NEXT_FIRES)
    return ScheduleDetail(
        now=now,
        info=info,
        next_fires=[moment for moment, _ in upcoming],
        moved=[why for _, why in upcoming],
        history=admin.history(schedule=name, status=statuses or None, limit=HISTORY_ROWS),
        last_error=next(iter(admin.history(schedule=name, status=sorted(FAILING), limit=1)), None),
        skipped=admin.history(schedule=name, status=RunStatus.SKIPPED, limit=SKIPPED_ROWS),
        chart=chart(recent, start, end),
        versions=admin.versions(name)[::-1][:VERSION_ROWS],
    )


def runs(admin: Admin, where: RunFilter) -> tuple[datetime, list[RunRecord]]:
    return admin.store().now(), admin.history(**where.admin_kwargs())  # type: ignore[arg-type]


def node_rows(admin: Admin) -> tuple[datetime, list[NodeRow], float]:
    nodes = admin.nodes()
    in_flight = admin.in_flight()
    buckets = admin.owned_buckets(nodes)
    rows = [NodeRow(n, in_flight.get(n.id, 0), buckets.get(n.id) if n.live else 0) for n in nodes]
    return admin.store().now(), rows, admin.node_ttl()


@dataclass(frozen=True)
class Ownership:
    """How the configured membership shares the buckets, for the nodes page's explanation.

    :param partitions: whether the membership shares the buckets among the nodes (``hashring``);
        ``False``: every node attempts every bucket (``single``, ``all``)
    :param owners: owners of each bucket (``hashring``: 2 by default), ``None`` when unknown
    """

    membership: str
    buckets: int
    partitions: bool
    owners: int | None
    live: int

    @property
    def owners_now(self) -> int | None:
        """Owners of each bucket with the nodes live now (fewer when fewer nodes are live)."""
        return None if self.owners is None else min(self.owners, self.live)


def ownership(admin: Admin, rows: list[NodeRow]) -> Ownership:
    membership = build_membership(admin.config, admin.manager)
    owners = membership.owners
    # A membership partitions when it answers buckets_for with a subset (None: "all of them").
    partitions = owners is not None or any(row.buckets is not None for row in rows if row.node.live)
    return Ownership(
        membership=admin.config.membership.plugin,
        buckets=BUCKETS,
        partitions=partitions,
        owners=owners,
        live=sum(1 for row in rows if row.node.live),
    )


# -- JSON -----------------------------------------------------------------------------------------


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else round((end - start).total_seconds(), 3)


def schedule_json(info: ScheduleInfo) -> dict[str, Any]:
    return {**info.as_json(), "description": describe(info.kind, info.expression)}


def run_json(record: RunRecord) -> dict[str, Any]:
    return {**record.as_json(), "duration_seconds": seconds_between(record.started_at, record.finished_at)}


def fire_json(fire: Fire) -> dict[str, Any]:
    return {
        "schedule": fire.latest.schedule,
        "scheduled_for": iso_z(fire.latest.scheduled_for),
        "status": fire.latest.status.value,
        "attempts": [run_json(r) for r in fire.attempts],
    }


def detail_json(detail: ScheduleDetail) -> dict[str, Any]:
    return {
        **schedule_json(detail.info),
        "next_fires": [iso_z(t) for t in detail.next_fires],
        # Beside each next fire: why a holiday rule moved it ("" when it did not; docs/holidays.md).
        "next_fires_moved": list(detail.moved),
        "last_run": None if detail.info.last_run is None else run_json(detail.info.last_run),
        "last_error": None if detail.last_error is None else run_json(detail.last_error),
        "skipped": [run_json(r) for r in detail.skipped],
        "history": [run_json(r) for r in detail.history],
        "fires": [fire_json(f) for f in detail.fires],
        "versions": [v.as_json() for v in detail.versions],
    }


def node_json(row: NodeRow) -> dict[str, Any]:
    return {**row.node.as_json(), "in_flight": row.in_flight, "buckets": row.buckets}
