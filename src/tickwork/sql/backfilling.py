"""Backfill: fire times queued by ``tickwork jobs backfill`` and taken by the nodes owning their
schedules, each run as a further run of its fire (docs/cluster.md#backfill)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, case, delete, func, select
from sqlalchemy.exc import IntegrityError

from ..errors import ScheduleNotFoundError
from ..structures import Claim
from . import bulk
from .retry import transient_retry
from .rows import spec_from_row
from .schema import backfills, runs, schedules
from .storecore import SQLCore


class Backfilling(SQLCore):
    """Queueing backfilled fires and taking them (:meth:`tickwork.abc.Store.queue_backfill`)."""

    @transient_retry
    def queue_backfill(self, name: str, times: Sequence[datetime], *, rerun: bool = False) -> list[datetime]:
        with self._tx() as conn:
            schedule_id = conn.scalar(select(schedules.c.id).where(schedules.c.name == name))
            if schedule_id is None:
                raise ScheduleNotFoundError(name)
            ran = set() if rerun else self._ran(conn, schedule_id, times)
            wanted = [t for t in times if t not in ran]
            now = conn.execute(self.now_query()).scalar_one()
            queued = set(conn.scalars(select(backfills.c.scheduled_for).where(backfills.c.schedule_id == schedule_id)))
            rows = [
                {"schedule_id": schedule_id, "scheduled_for": t, "rerun": rerun, "created_at": now}
                for t in wanted
                if t not in queued
            ]
            for batch in bulk.chunks(rows):
                conn.execute(self.insert_ignore(backfills), list(batch))
            if rows:
                self._notify(conn)
        return wanted

    @staticmethod
    def _ran(conn: Connection, schedule_id: int, times: Sequence[datetime]) -> set[datetime]:
        """The fire times among ``times`` that the history holds a run of (a skipped fire was
        not run: backfilling it is what a backfill is for)."""
        found: set[datetime] = set()
        for batch in bulk.chunks(list(times)):
            found.update(
                conn.scalars(
                    select(runs.c.scheduled_for).where(
                        runs.c.schedule_id == schedule_id,
                        runs.c.scheduled_for.in_(list(batch)),
                        runs.c.status != "skipped",
                    )
                )
            )
        return found

    @transient_retry
    def take_backfills(self, node_id: str, *, limit: int, buckets: Sequence[int] | None) -> list[Claim]:
        # One transaction: the queue rows taken are deleted as their runs are recorded, so two
        # nodes never both take one (the delete's row count decides which).
        with self._tx() as conn:
            now = conn.execute(self.now_query()).scalar_one()
            query = (
                select(backfills.c.id.label("backfill_id"), backfills.c.scheduled_for, backfills.c.rerun, schedules)
                .join(schedules, schedules.c.id == backfills.c.schedule_id)
                .order_by(backfills.c.scheduled_for, backfills.c.id)
                .limit(limit)
            )
            owned = self._owned(buckets)
            if owned is not None:
                query = query.where(owned)
            taken: list[Claim] = []
            for row in conn.execute(query).all():
                gone = conn.execute(delete(backfills).where(backfills.c.id == row.backfill_id)).rowcount
                if not gone:
                    continue  # another node took it
                attempt = self._next_attempt(conn, row.id, row.scheduled_for, rerun=bool(row.rerun))
                if attempt is None:
                    continue  # run meanwhile (its regular fire, another backfill)
                run_id = self._open_run(conn, row.id, row.scheduled_for, attempt, node_id, now)
                if run_id is None:
                    continue
                spec = spec_from_row(row._mapping)
                taken.append(Claim(row.id, spec, row.scheduled_for, row.claim_seq, now, run_id, attempt))
        return taken

    @staticmethod
    def _next_attempt(conn: Connection, schedule_id: int, moment: datetime, *, rerun: bool) -> int | None:
        """The attempt number the backfilled fire runs as: 1 when the history holds none of it, the
        next one after a skipped fire (or any with ``rerun``), ``None``: it ran, do not rerun."""
        last, ran = conn.execute(
            # CASE, not FILTER: MySQL has no aggregate FILTER clause.
            select(func.max(runs.c.attempt), func.sum(case((runs.c.status != "skipped", 1), else_=0))).where(
                runs.c.schedule_id == schedule_id, runs.c.scheduled_for == moment
            )
        ).one()
        if last is None:
            return 1
        if ran and not rerun:
            return None
        return int(last) + 1

    def _open_run(
        self, conn: Connection, schedule_id: int, moment: datetime, attempt: int, node_id: str, now: datetime
    ) -> int | None:
        values: dict[str, Any] = {
            "schedule_id": schedule_id,
            "scheduled_for": moment,
            "attempt": attempt,
            "node": node_id,
            "started_at": now,
            "status": "running",
        }
        if self.features.insert_ignore_returning:
            # A fire recorded meanwhile is skipped by the insert: no id comes back.
            found = conn.execute(self.insert_ignore(runs).values(**values).returning(runs.c.id)).scalar()
            return None if found is None else int(found)
        # A plain INSERT in a savepoint: a fire recorded meanwhile fails only this statement.
        try:
            with conn.begin_nested():
                inserted = conn.execute(runs.insert().values(**values))
        except IntegrityError:
            return None
        key = inserted.inserted_primary_key
        return None if key is None else int(key[0])
