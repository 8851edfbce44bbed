"""Pausing: a schedule disabled with a note (who, when, until when), the housekeeping that resumes
an expired pause, the consecutive failures counted for ``pause_after_failures``, and the fires
counted for ``max_runs``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Delete, Integer, Update, bindparam, delete, false, func, select, true, update

from ..structures import FAILING, PAUSED_BY_TICKWORK, Finish, Pause, RunStatus, Schedule, ScheduleSpec, failures_note
from ..structures import cap_error as cap
from .retry import transient_retry
from .rows import next_fire_values, schedule_from_row
from .schema import UTCDateTime, backfills, runs, schedule_versions, schedules
from .storecore import SQLCore

#: A resumed (enabled) schedule keeps no pause and counts its failures afresh.
PAUSE_CLEARED: dict[str, Any] = {
    "paused_note": None,
    "paused_by": None,
    "paused_at": None,
    "paused_until": None,
    "failures": 0,
}


def pause_values(pause: Pause, now: Any) -> dict[str, Any]:
    """The columns of ``pause`` taken at ``now`` (the database clock)."""
    return {
        "paused_note": cap(pause.note, 1000),
        "paused_by": pause.by,
        "paused_at": now,
        "paused_until": pause.until,
    }


class Pausing(SQLCore):
    """Resuming expired pauses and counting failures (the pause itself is :meth:`set_enabled`)."""

    @transient_retry
    def resume_expired(self, next_fire: Callable[[ScheduleSpec, datetime], datetime | None]) -> list[Schedule]:
        # Reads ix_tickwork_schedules_paused_until: its cost follows the pauses that expired.
        with self._tx() as conn:
            now = conn.execute(self.now_query()).scalar_one()
            expired = conn.execute(
                select(schedules)
                .where(
                    schedules.c.paused_until <= bindparam("now", now, type_=UTCDateTime),
                    schedules.c.enabled == false(),
                )
                # A row another session holds locked is resumed at the next turn (about a
                # second), not waited for: this runs between the loop's passes.
                .with_for_update(skip_locked=True)
            ).all()
            resumed: list[Schedule] = []
            for row in expired:
                stored = schedule_from_row(row)
                # Fenced on the pause read: a pause renewed meanwhile (another node, a user) stays.
                write = (
                    update(schedules)
                    .where(schedules.c.id == stored.id, schedules.c.paused_until == row.paused_until)
                    .values(
                        enabled=True,
                        updated_at=self.now_expr(),
                        fault=None,
                        fault_kind=None,
                        **PAUSE_CLEARED,
                        **next_fire_values(next_fire(stored.spec, now)),
                    )
                )
                if conn.execute(write).rowcount:
                    resumed.append(stored)
            if resumed:
                self._notify(conn)
        return resumed

    @transient_retry
    def next_pause_end(self) -> float | None:
        # MIN over ix_tickwork_schedules_paused_until: the index's first entry. An enabled
        # schedule has no pause (enabling clears it), so no filter on enabled is needed.
        with self._tx() as conn:
            row = conn.execute(select(func.min(schedules.c.paused_until), self.now_expr())).one()
        return None if row[0] is None else (row[0] - row[1]).total_seconds()

    def _count_ends(self, conn: Connection, finishes: Sequence[Finish], landed: set[int]) -> None:
        """In the transaction of the ends: what ``pause_after_failures`` and ``max_runs`` count
        (schedules without them write nothing more)."""
        self._count_failures(conn, finishes, landed)
        self._count_runs(conn, finishes, landed)

    def _count_runs(self, conn: Connection, finishes: Sequence[Finish], landed: set[int]) -> None:
        """The fires that ran of the schedules with ``max_runs``; one that reached it has no next
        fire, or is removed (``on_finish = "remove"``) with its history."""
        ran = [
            f
            for f in finishes
            if f.claim.spec.max_runs is not None
            and f.claim.schedule_id in landed
            and f.outcome.status in (RunStatus.SUCCEEDED, *FAILING)
        ]
        if not ran:
            return
        conn.execute(
            self._statement("runs/count", self._run_count_statement), [{"b_id": f.claim.schedule_id} for f in ran]
        )
        ends = [{"b_id": f.claim.schedule_id, "b_limit": f.claim.spec.max_runs} for f in ran]
        kept = [e for e, f in zip(ends, ran, strict=True) if not f.claim.spec.on_finish.removes]
        removed = [e for e, f in zip(ends, ran, strict=True) if f.claim.spec.on_finish.removes]
        if kept:
            conn.execute(self._statement("runs/finish", self._finish_statement), kept)
        for table in (runs, backfills, schedule_versions):
            if removed:
                conn.execute(self._remove_finished(table), removed)
        if removed:
            conn.execute(self._remove_finished(schedules), removed)
        self.statements += 1 + bool(kept) + 4 * bool(removed)

    @staticmethod
    def _run_count_statement() -> Update:
        return update(schedules).where(schedules.c.id == bindparam("b_id")).values(run_count=schedules.c.run_count + 1)

    @staticmethod
    def _finish_statement() -> Update:
        return (
            update(schedules)
            .where(schedules.c.id == bindparam("b_id"), schedules.c.run_count >= bindparam("b_limit", type_=Integer))
            .values(fire_requested_at=None, **next_fire_values(None))
        )

    @staticmethod
    def _remove_finished(table: Any) -> Delete:
        """Delete ``table``'s rows of the finished schedule (runs and backfills by schedule id;
        explicit, so SQLite does not depend on PRAGMA foreign_keys for the cascade)."""
        reached = (schedules.c.id == bindparam("b_id"), schedules.c.run_count >= bindparam("b_limit", type_=Integer))
        if table is schedules:
            # Directly: MySQL refuses a subquery reading the table a DELETE deletes from.
            return delete(schedules).where(*reached)
        return delete(table).where(table.c.schedule_id.in_(select(schedules.c.id).where(*reached).scalar_subquery()))

    def _count_failures(self, conn: Connection, finishes: Sequence[Finish], landed: set[int]) -> None:
        """In the transaction of the ends: the consecutive failed fires of the schedules with
        ``pause_after_failures`` (none else: their ends write nothing more), and the pause of
        those that reached it. A success resets the count; other outcomes leave it."""
        counted = [
            f for f in finishes if f.claim.spec.pause_after_failures is not None and f.claim.schedule_id in landed
        ]
        if not counted:
            return
        failed = [f for f in counted if f.outcome.status in FAILING]
        succeeded = [f.claim.schedule_id for f in counted if f.outcome.status is RunStatus.SUCCEEDED]
        if succeeded:
            conn.execute(
                update(schedules).where(schedules.c.id.in_(succeeded), schedules.c.failures != 0).values(failures=0)
            )
        if failed:
            ids = [{"b_id": f.claim.schedule_id} for f in failed]
            conn.execute(self._statement("failures/count", self._count_statement), ids)
            pauses = [
                {
                    "b_id": f.claim.schedule_id,
                    "b_limit": f.claim.spec.pause_after_failures,
                    "b_note": failures_note(f.claim.spec.pause_after_failures or 0),
                }
                for f in failed
            ]
            conn.execute(self._statement("failures/pause", self._pause_statement), pauses)
            self.statements += 2

    @staticmethod
    def _count_statement() -> Update:
        return update(schedules).where(schedules.c.id == bindparam("b_id")).values(failures=schedules.c.failures + 1)

    def _pause_statement(self) -> Update:
        # Its own statement after the count (MySQL assigns SET left to right): the schedule
        # pauses once its count reached the limit it has now.
        return (
            update(schedules)
            .where(
                schedules.c.id == bindparam("b_id"),
                schedules.c.failures >= bindparam("b_limit", type_=Integer),
                schedules.c.enabled == true(),
            )
            .values(
                enabled=False,
                **next_fire_values(None),
                fire_requested_at=None,
                paused_note=bindparam("b_note"),
                paused_by=PAUSED_BY_TICKWORK,
                paused_at=self.now_expr(),
                paused_until=None,
            )
        )
