"""Reading the history and the schedules for admins (tickwork.admin, the CLI, the dashboard), and pruning."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    ScalarSelect,
    and_,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
)

from ..abc.storeroles import PRUNE_BATCH
from ..config.numbers import integer
from ..structures import (
    FAILING,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleState,
)
from .bulk import chunks
from .retry import transient_retry
from .rows import run_record, schedule_from_row
from .schema import runs, schedules
from .storecore import SQLCore

#: Schedule ids per statement of :meth:`~HistoryQueries.last_runs`.
LAST_RUNS_BATCH = 10_000


class HistoryQueries(SQLCore):
    """Reading the history and the schedules for admins (tickwork.admin, the CLI, the dashboard), and pruning."""

    @transient_retry
    def history(self, *, limit: int = 50, schedule: str | None = None, namespace: str | None = None) -> list[RunRecord]:
        query = (
            select(runs, schedules.c.name.label("schedule_name"), schedules.c.namespace.label("schedule_namespace"))
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .order_by(runs.c.id.desc())
            .limit(limit)
        )
        if schedule is not None:
            query = query.where(schedules.c.name == schedule)
        if namespace is not None:
            query = query.where(schedules.c.namespace == namespace)
        with self._tx() as conn:
            return [run_record(r) for r in conn.execute(query)]

    def _schedule_filters(
        self,
        state: ScheduleState | None,
        enabled: bool | None,
        search: str | None,
        failing: bool | None = None,
        parked: bool | None = None,
        namespace: str | None = None,
    ) -> list[ColumnElement[bool]]:
        conditions: list[ColumnElement[bool]] = []
        if namespace is not None:
            conditions.append(schedules.c.namespace == namespace)
        if parked is not None:
            conditions.append(schedules.c.fault.is_not(None) if parked else schedules.c.fault.is_(None))
        if failing is not None:
            # "Last run" as last_runs() defines it: the latest attempt of the latest fire.
            status = _latest_of_each("status")
            failed = status.in_(sorted(s.value for s in FAILING))
            conditions.append(failed if failing else or_(status.is_(None), ~failed))
        if state is not None:
            conditions.append(schedules.c.state == state.value)
        if enabled is not None:
            conditions.append(schedules.c.enabled.is_(enabled))
        if search:
            needle = search.lower()
            conditions.append(
                or_(
                    func.lower(schedules.c.name).contains(needle, autoescape=True),
                    func.lower(schedules.c.target).contains(needle, autoescape=True),
                )
            )
        return conditions

    @transient_retry
    def find_schedules(
        self,
        *,
        state: ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        failing: bool | None = None,
        parked: bool | None = None,
        namespace: str | None = None,
    ) -> list[Schedule]:
        # NULLS LAST spelled as a CASE: MySQL/MariaDB have no NULLS LAST.
        query = (
            select(schedules)
            .where(*self._schedule_filters(state, enabled, search, failing, parked, namespace))
            .order_by(
                case((schedules.c.next_fire.is_(None), 1), else_=0),
                schedules.c.next_fire,
                schedules.c.name,
                schedules.c.namespace,
            )
            .offset(offset)
        )
        if limit is not None:
            query = query.limit(limit)
        with self._tx() as conn:
            return [schedule_from_row(row) for row in conn.execute(query)]

    @transient_retry
    def count_schedules(
        self,
        *,
        state: ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        failing: bool | None = None,
        parked: bool | None = None,
        namespace: str | None = None,
    ) -> int:
        query = (
            select(func.count())
            .select_from(schedules)
            .where(*self._schedule_filters(state, enabled, search, failing, parked, namespace))
        )
        with self._tx() as conn:
            return int(conn.execute(query).scalar_one())

    @transient_retry
    def last_runs(self, schedule_ids: Sequence[int]) -> dict[int, RunRecord]:
        found: dict[int, RunRecord] = {}
        # In batches: one bound parameter per id, and PostgreSQL takes at most 65,535 per
        # statement (`jobs add --from FILE --replace` of 70,000 failed after its write).
        for batch in chunks(list(schedule_ids), LAST_RUNS_BATCH):
            # From each schedule to its latest fire's latest attempt: not the highest run id,
            # which a backfill of last week (or a rerun of an old fire) would make an old fire.
            query = (
                select(runs, schedules.c.name.label("schedule_name"), schedules.c.namespace.label("schedule_namespace"))
                .select_from(schedules.join(runs, runs.c.id == _latest_of_each("id")))
                .where(schedules.c.id.in_(list(batch)))
            )
            with self._tx() as conn:
                found.update((r.schedule_id, run_record(r)) for r in conn.execute(query))
        return found

    @transient_retry
    def recent_runs(
        self, schedules: Sequence[Schedule], *, limit: int, status: Sequence[RunStatus] | None = None
    ) -> dict[int, list[RunRecord]]:
        # One statement per schedule, each a backward range scan of the fire index
        # (uq_tickwork_runs_fire: schedule_id, scheduled_for, attempt) stopped after `limit` rows:
        # the cost follows the page shown, not the history's size. A window function over all
        # the page's runs would read every run of every schedule on it. One UNION ALL of these
        # reads (one round trip) was tried and measured slower: 73-92 ms against 27-30 ms for a
        # page of 50 on a local PostgreSQL, 24-36 against 11-22 ms on SQLite (300 schedules).
        out: dict[int, list[RunRecord]] = {}
        query = (
            select(runs, literal("").label("schedule_name"), literal("").label("schedule_namespace"))
            .where(runs.c.schedule_id == bindparam("sid"))
            .order_by(runs.c.scheduled_for.desc(), runs.c.attempt.desc())
            .limit(limit)
        )
        if status:
            query = query.where(runs.c.status.in_([s.value for s in status]))
        with self._tx() as conn:
            for schedule in schedules:
                rows = conn.execute(query, {"sid": schedule.id})
                out[schedule.id] = [
                    replace(run_record(r), schedule=schedule.name, namespace=schedule.spec.namespace) for r in rows
                ]
        return out

    @transient_retry
    def find_runs(
        self,
        *,
        schedule: str | None = None,
        status: Sequence[RunStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        node: str | None = None,
        limit: int = 100,
        namespace: str | None = None,
    ) -> list[RunRecord]:
        query = (
            select(runs, schedules.c.name.label("schedule_name"), schedules.c.namespace.label("schedule_namespace"))
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .order_by(runs.c.scheduled_for.desc(), runs.c.attempt.desc(), runs.c.id.desc())
            .limit(limit)
        )
        if schedule is not None:
            query = query.where(schedules.c.name == schedule)
        if status:
            query = query.where(runs.c.status.in_([s.value for s in status]))
        if since is not None:
            query = query.where(runs.c.scheduled_for >= since)
        if until is not None:
            query = query.where(runs.c.scheduled_for < until)
        if node is not None:
            query = query.where(runs.c.node == node)
        if namespace is not None:
            query = query.where(schedules.c.namespace == namespace)
        with self._tx() as conn:
            return [run_record(r) for r in conn.execute(query)]

    @transient_retry
    def get_run(self, run_id: int) -> RunRecord | None:
        query = (
            select(runs, schedules.c.name.label("schedule_name"), schedules.c.namespace.label("schedule_namespace"))
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .where(runs.c.id == run_id)
        )
        with self._tx() as conn:
            row = conn.execute(query).first()
        return None if row is None else run_record(row)

    @transient_retry
    def prune_history(self, older_than: timedelta, *, limit: int = PRUNE_BATCH) -> int:
        """Delete at most ``limit`` finished runs that finished more than ``older_than`` ago
        (database clock), lowest ids first, in one transaction (the database's limited
        ``DELETE``: :meth:`~tickwork.sql.features.Operations.limited_delete`)."""
        integer("limit", limit, low=1, high=1_000_000)
        cutoff = self._plus_seconds(self.now_expr(), literal(-older_than.total_seconds()))
        # A row at or after its schedule's next fire fences that fire (an abandoned fire released
        # with its fire time unchanged): without it the fire would run again. Kept, however old.
        fences_a_fire = (
            select(schedules.c.id)
            .where(schedules.c.id == runs.c.schedule_id, schedules.c.next_fire <= runs.c.scheduled_for)
            .exists()
        )
        old = and_(runs.c.status != "running", runs.c.finished_at < cutoff, ~fences_a_fire)
        with self._tx() as conn:
            result = conn.execute(self.operations.limited_delete(runs, old, limit))
        return int(result.rowcount or 0)


def _latest_of_each(column: str) -> ScalarSelect[Any]:
    """The runs ``column`` of the latest run of the enclosing query's ``schedules`` row: the
    latest fire time, its latest attempt. Ordered as the fire index (``uq_tickwork_runs_fire``)
    is, so the database can read it backwards one step per schedule (not measured here)."""
    latest = runs.alias("latest_run")
    return (
        select(latest.c[column])
        .where(latest.c.schedule_id == schedules.c.id)
        # (schedule, fire time, attempt) is unique: no tie to break, and the order is the index's.
        .order_by(latest.c.scheduled_for.desc(), latest.c.attempt.desc())
        .limit(1)
        .correlate(schedules)
        .scalar_subquery()
    )
