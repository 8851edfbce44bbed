"""What the pages and the API show, read through the admin API in one request thread."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tickwork.admin import Admin
from tickwork.admin.info import NodeInfo, ScheduleInfo
from tickwork.scheduling.firetimes import jitter_offset
from tickwork.structures import FAILING, RunRecord, RunStatus, iso_z

from .queries import RunFilter, ScheduleFilter
from .words import describe

#: Rows of history on a schedule's page, and skipped fire times listed there.
HISTORY_ROWS = 50
SKIPPED_ROWS = 20
NEXT_FIRES = 10


@dataclass(frozen=True)
class SchedulePage:
    now: datetime
    total: int
    schedules: list[ScheduleInfo]


@dataclass(frozen=True)
class ScheduleDetail:
    now: datetime
    info: ScheduleInfo
    next_fires: list[datetime]
    history: list[RunRecord]
    last_error: RunRecord | None
    skipped: list[RunRecord]

    @property
    def jitter_offset(self) -> float:
        """Seconds every fire of the schedule is moved by its ``jitter`` (0 without one)."""
        return jitter_offset(self.info.name, self.info.spec.jitter).total_seconds()


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


def schedule_detail(admin: Admin, name: str, statuses: list[RunStatus]) -> ScheduleDetail:
    info = admin.get(name)
    return ScheduleDetail(
        now=admin.store().now(),
        info=info,
        next_fires=admin.next_fires(name, NEXT_FIRES),
        history=admin.history(schedule=name, status=statuses or None, limit=HISTORY_ROWS),
        last_error=next(iter(admin.history(schedule=name, status=sorted(FAILING), limit=1)), None),
        skipped=admin.history(schedule=name, status=RunStatus.SKIPPED, limit=SKIPPED_ROWS),
    )


def runs(admin: Admin, where: RunFilter) -> tuple[datetime, list[RunRecord]]:
    return admin.store().now(), admin.history(**where.admin_kwargs())  # type: ignore[arg-type]


def node_rows(admin: Admin) -> tuple[datetime, list[NodeRow], float]:
    nodes = admin.nodes()
    in_flight = admin.in_flight()
    buckets = admin.owned_buckets(nodes)
    rows = [NodeRow(n, in_flight.get(n.id, 0), buckets.get(n.id) if n.live else 0) for n in nodes]
    return admin.store().now(), rows, admin.node_ttl()


# -- JSON -----------------------------------------------------------------------------------------


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else round((end - start).total_seconds(), 3)


def schedule_json(info: ScheduleInfo) -> dict[str, Any]:
    return {**info.as_json(), "description": describe(info.kind, info.expression)}


def run_json(record: RunRecord) -> dict[str, Any]:
    return {**record.as_json(), "duration_seconds": seconds_between(record.started_at, record.finished_at)}


def detail_json(detail: ScheduleDetail) -> dict[str, Any]:
    return {
        **schedule_json(detail.info),
        "next_fires": [iso_z(t) for t in detail.next_fires],
        "last_run": None if detail.info.last_run is None else run_json(detail.info.last_run),
        "last_error": None if detail.last_error is None else run_json(detail.last_error),
        "skipped": [run_json(r) for r in detail.skipped],
        "history": [run_json(r) for r in detail.history],
    }


def node_json(row: NodeRow) -> dict[str, Any]:
    return {**row.node.as_json(), "in_flight": row.in_flight, "buckets": row.buckets}
