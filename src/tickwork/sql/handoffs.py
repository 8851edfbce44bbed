"""Runs handed off to another system's queue (the Celery, RQ and Dramatiq executors): the worker's
fenced reports and the "previous hand-off not final" check (docs/handoff.md)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import and_, func, literal, select, update

from ..errors import ScheduleNotFoundError
from ..structures import DEFAULT_NAMESPACE, RunRecord, RunStatus, ScheduleKey, cap_worker
from ..structures import cap_error as cap
from .retry import transient_retry
from .rows import run_record
from .schema import PARTIAL_INDEX_DIALECTS, named, open_handoff, runs, schedules
from .storecore import SQLCore

#: Schedules looked up per statement by :meth:`Handoffs.pending_handoffs`.
PENDING_CHUNK = 500


def _by(ids: list[int], size: int) -> list[list[int]]:
    """``ids`` in lists of at most ``size`` (:attr:`Operations.indexed_in_list`)."""
    return [ids[start : start + size] for start in range(0, len(ids), size)]


def _schedule_ids(conn: Any, keys: list[ScheduleKey]) -> list[int]:
    """The ids of the schedules ``keys``, through the unique index by name: a ``(namespace, name)
    IN (...)`` list of row values was a sequential scan testing every schedule against every
    pair (51 ms for 420 keys among 5,000 schedules on PostgreSQL, most of a hand-off batch's
    check). A name of one key's namespace paired with another's is dropped here."""
    wanted = set(keys)
    rows = conn.execute(
        select(schedules.c.id, schedules.c.namespace, schedules.c.name).where(
            schedules.c.namespace.in_(sorted({ns for ns, _ in wanted})),
            schedules.c.name.in_(sorted({name for _, name in wanted})),
        )
    )
    return [sid for sid, namespace, name in rows if (namespace, name) in wanted]


class Handoffs(SQLCore):
    """:meth:`~tickwork.abc.Store.report_handoff`, :meth:`~tickwork.abc.Store.pending_handoffs`,
    :meth:`~tickwork.abc.Store.mark_stuck_handoffs` and :meth:`~tickwork.abc.Store.release_handoffs`."""

    @transient_retry
    def report_handoff(
        self,
        run_id: int,
        status: RunStatus,
        *,
        expect: Collection[RunStatus],
        error: str | None = None,
        worker: str | None = None,
    ) -> tuple[bool, RunStatus | None]:
        now = self.now_expr()
        values: dict[str, Any] = {"status": status.value, "error": cap(error)}
        if status is RunStatus.STARTED:
            values.update(started_at=now, finished_at=None)
        else:
            values["finished_at"] = now
        if worker is not None:
            # In the same fenced update: a refused report names no worker.
            values["worker"] = cap_worker(worker)
        with self._tx() as conn:
            # The status in the WHERE clause is the fence: of two workers holding the same message
            # (a redelivery), only one moves the run out of the expected status.
            landed = conn.execute(
                update(runs)
                .where(runs.c.id == run_id, runs.c.status.in_(sorted(s.value for s in expect)))
                .values(**values)
            ).rowcount
            if landed == 1:
                return True, status
            current = conn.execute(select(runs.c.status).where(runs.c.id == run_id)).scalar()
        return False, None if current is None else RunStatus(current)

    @transient_retry
    def pending_handoffs(self, keys: Collection[ScheduleKey], report_timeout: float) -> dict[ScheduleKey, RunRecord]:
        found: dict[ScheduleKey, RunRecord] = {}
        wanted = sorted(set(keys))
        # Chunks keep the IN lists within every database's bound-parameter limit.
        for start in range(0, len(wanted), PENDING_CHUNK):
            found.update(self._pending_of(wanted[start : start + PENDING_CHUNK], report_timeout))
        return found

    def _pending_of(self, keys: list[ScheduleKey], report_timeout: float) -> dict[ScheduleKey, RunRecord]:
        # Submitted: finished_at is the hand-off; started: started_at is the worker's start.
        since = func.coalesce(runs.c.finished_at, runs.c.started_at)
        cutoff = self._plus_seconds(self.now_expr(), literal(-float(report_timeout)))
        with self._tx() as conn:
            # Step by step, each by an index: the schedules' ids, their open runs' ids (the open
            # hand-offs' partial index; MySQL's (schedule_id, status)), then those runs by primary
            # key. As one UPDATE ... WHERE schedule_id IN (SELECT ...), MariaDB scanned the whole
            # history (11 s per batch of 500 hand-offs beside 2 million finished runs, 2.1 s with
            # the ids listed), PostgreSQL read each schedule's history (0.4 s), SQLite too (2.4 s).
            ids = _schedule_ids(conn, keys)
            if not ids:
                return {}
            open_ids = [
                run_id
                for chunk in _by(ids, self.operations.indexed_in_list)
                for run_id in conn.scalars(select(runs.c.id).where(runs.c.schedule_id.in_(chunk), open_handoff()))
            ]
            if not open_ids:
                return {}
            pending = and_(runs.c.id.in_(open_ids), open_handoff())
            conn.execute(
                update(runs)
                .where(pending, since < cutoff)
                .values(
                    status=RunStatus.TIMED_OUT.value,
                    finished_at=self.now_expr(),
                    error=f"no report from the queue's worker within report_timeout = {report_timeout:g}s",
                )
            )
            rows = conn.execute(
                select(runs, schedules.c.name.label("schedule_name"), schedules.c.namespace.label("schedule_namespace"))
                .join(schedules, schedules.c.id == runs.c.schedule_id)
                .where(pending)
                .order_by(runs.c.id)
            ).all()
        # The latest pending run of each schedule (rows in id order: the last one wins).
        return {(row.schedule_namespace, row.schedule_name): run_record(row) for row in rows}

    def _runs_of(self, conn: Any, ids: list[int]) -> list[RunRecord]:
        rows = conn.execute(
            select(runs, schedules.c.name.label("schedule_name"), schedules.c.namespace.label("schedule_namespace"))
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .where(runs.c.id.in_(ids))
            .order_by(runs.c.id)
        ).all()
        return [run_record(row) for row in rows]

    @transient_retry
    def mark_stuck_handoffs(self, executor: str, pickup_timeout: float, note: str, limit: int = 100) -> list[RunRecord]:
        submitted = RunStatus.SUBMITTED.value
        # Submitted: finished_at is the hand-off, by the database clock.
        cutoff = self._plus_seconds(self.now_expr(), literal(-float(pickup_timeout)))
        waiting = (open_handoff(), runs.c.status == submitted, runs.c.error.is_(None), runs.c.finished_at < cutoff)
        with self._tx() as conn:
            if conn.dialect.name in PARTIAL_INDEX_DIALECTS:
                # The open hand-offs' partial index holds only what no worker finished: one read
                # of it, each joined to its schedule by primary key, whatever the number of the
                # executor's schedules (in lists of 1,000 ids, 100,000 schedules were 101
                # statements every check).
                found = list(
                    conn.scalars(
                        select(runs.c.id)
                        .join(schedules, schedules.c.id == runs.c.schedule_id)
                        .where(schedules.c.executor == executor, *waiting)
                    )
                )
            else:
                # No partial index (MySQL): the executor's schedules, then their open hand-offs
                # by the (schedule_id, status) index, list by list. As one join MariaDB read every
                # run of each schedule through the unique key (4.9 s beside 2 million finished
                # runs), or, with ORDER BY id LIMIT, walked the whole history by primary key.
                ids = list(conn.scalars(select(schedules.c.id).where(schedules.c.executor == executor)))
                found = []
                for chunk in _by(ids, self.operations.indexed_in_list):
                    found += conn.scalars(select(runs.c.id).where(runs.c.schedule_id.in_(chunk), *waiting))
            # The oldest ``limit`` (sorted here: ORDER BY id LIMIT in the statement walked the
            # primary key of the whole history).
            candidates = sorted(found)[:limit]
            marked: list[int] = []
            for run_id in candidates:
                # One fenced update per run (there are few): of two nodes marking at once, the
                # one whose update lands logs the run, the other sees rowcount 0.
                landed = conn.execute(
                    update(runs)
                    .where(runs.c.id == run_id, runs.c.status == submitted, runs.c.error.is_(None))
                    .values(error=cap(note))
                ).rowcount
                if landed == 1:
                    marked.append(run_id)
            return self._runs_of(conn, marked) if marked else []

    @transient_retry
    def release_handoffs(self, schedule: str, reason: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[RunRecord]:
        submitted = RunStatus.SUBMITTED.value
        with self._tx() as conn:
            schedule_id = conn.scalar(select(schedules.c.id).where(*named(schedule, namespace)))
            if schedule_id is None:
                raise ScheduleNotFoundError(schedule)
            candidates = list(
                conn.scalars(select(runs.c.id).where(runs.c.schedule_id == schedule_id, runs.c.status == submitted))
            )
            released: list[int] = []
            for run_id in candidates:
                # The status is the fence: a worker's start that landed first keeps its run.
                landed = conn.execute(
                    update(runs)
                    .where(runs.c.id == run_id, runs.c.status == submitted)
                    .values(status=RunStatus.CANCELLED.value, finished_at=self.now_expr(), error=cap(reason))
                ).rowcount
                if landed == 1:
                    released.append(run_id)
            return self._runs_of(conn, released) if released else []
