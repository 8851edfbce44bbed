"""Backfill: fire times queued by ``tickwork jobs backfill`` and taken by the nodes owning their
schedules, each run as a further run of its fire (docs/cluster.md#backfill)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, bindparam, case, delete, exists, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from ..errors import ScheduleNotFoundError
from ..structures import (
    DEFAULT_NAMESPACE,
    Claim,
    Finish,
    Outcome,
    Overlap,
    backfill_takeable,
    check_backfill_overlap,
    refuse_future_backfill,
)
from ..structures import cap_error as cap
from . import bulk
from .retry import transient_retry
from .rows import spec_from_row
from .schema import UTCDateTime, backfills, named, runs, schedules
from .storecore import SQLCore


class Backfilling(SQLCore):
    """Queueing backfilled fires and taking them (:meth:`tickwork.abc.Store.queue_backfill`)."""

    @transient_retry
    def queue_backfill(
        self,
        name: str,
        times: Sequence[datetime],
        *,
        rerun: bool = False,
        overlap: str = "buffer_all",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[datetime]:
        check_backfill_overlap(overlap)
        with self._tx() as conn:
            schedule_id = conn.scalar(select(schedules.c.id).where(*named(name, namespace)))
            if schedule_id is None:
                raise ScheduleNotFoundError(name)
            now = conn.execute(self.now_query()).scalar_one()
            refuse_future_backfill(name, times, now)
            ran = set() if rerun else self._ran(conn, schedule_id, times)
            wanted = [t for t in times if t not in ran]
            queued = set(conn.scalars(select(backfills.c.scheduled_for).where(backfills.c.schedule_id == schedule_id)))
            rows = [
                {"schedule_id": schedule_id, "scheduled_for": t, "rerun": rerun, "overlap": overlap, "created_at": now}
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
    def take_backfills(
        self,
        node_id: str,
        *,
        limit: int,
        buckets: Sequence[int] | None,
        namespaces: Sequence[str] | None = None,
        ends: Sequence[Finish] = (),
    ) -> list[Claim]:
        # One transaction. The ends carried first (the runs they end no longer count as
        # running below, so a buffered fire's successor starts in the transaction that ends it).
        # Then schedule by schedule, earliest queued fire first: the schedule's row is locked,
        # its running runs counted under that lock, and the leading queued fires its backfills'
        # overlap lets start now are taken (backfill_takeable), so two nodes never both start
        # the next fire of a buffer_all backfill. The queue rows taken are deleted as their runs
        # are recorded (the delete's row count decides which node took one).
        with self._tx() as conn:
            self._end_backfilled(conn, ends)
            if limit <= 0:
                return []
            waiting = self._waiting_backfills(limit, buckets, namespaces)
            taken: list[Claim] = []
            for schedule_id in conn.scalars(waiting).all():
                if len(taken) >= limit:
                    break
                taken.extend(self._take_of(conn, int(schedule_id), limit - len(taken), node_id))
        return taken

    def _end_backfilled(self, conn: Connection, ends: Sequence[Finish]) -> None:
        """Write the ends of backfilled runs as :meth:`end_attempt` does (a run no longer
        ``running``, recorded abandoned meanwhile, is left as it is), in one executemany."""
        if not ends:
            return
        statement = self._statement(
            "backfill_ends",
            lambda: (
                update(runs)
                .where(runs.c.id == bindparam("e_id"), runs.c.status == "running")
                .values(
                    status=bindparam("e_status"),
                    error=bindparam("e_error"),
                    finished_at=self.now_expr(),
                    started_at=func.coalesce(bindparam("e_started", type_=UTCDateTime), runs.c.started_at),
                )
            ),
        )
        conn.execute(
            statement,
            [
                {
                    "e_id": f.claim.run_id,
                    "e_status": f.outcome.status.value,
                    "e_error": cap(f.outcome.error),
                    "e_started": f.started_at,
                }
                for f in ends
            ],
        )

    def _waiting_backfills(
        self, limit: int, buckets: Sequence[int] | None, namespaces: Sequence[str] | None
    ) -> Select[Any]:
        """The ids of up to ``limit`` owned schedules with a queued fire due that may start one
        now, earliest queued fire first."""
        first = func.min(backfills.c.scheduled_for)
        # Only schedules that may start one now: a schedule with a running run waits unless
        # it has an allow backfill. A pre-filter (each is checked again under its row's lock
        # by the take): without it the `limit` schedules with the earliest queued fires are the ones
        # whose backfill is running, and a node that looks as a run ends takes nothing.
        runs_beside = func.max(case((backfills.c.overlap == Overlap.ALLOW.value, 1), else_=0)) == 1
        running = exists().where(runs.c.schedule_id == backfills.c.schedule_id, runs.c.status == "running")
        waiting = (
            select(backfills.c.schedule_id)
            .join(schedules, schedules.c.id == backfills.c.schedule_id)
            .where(backfills.c.scheduled_for <= self.now_expr())
            .group_by(backfills.c.schedule_id)
            .having(or_(runs_beside, ~running))
            .order_by(first, backfills.c.schedule_id)
            .limit(limit)
        )
        owned = self._owned(buckets)
        if owned is not None:
            waiting = waiting.where(owned)
        if namespaces is not None:
            waiting = waiting.where(schedules.c.namespace.in_(list(namespaces)))
        return waiting

    @transient_retry
    def retry_backfill(self, claim: Claim, outcome: Outcome) -> bool:
        with self._tx() as conn:
            ended = conn.execute(
                update(runs)
                .where(runs.c.id == claim.run_id, runs.c.status == "running")
                .values(status=outcome.status.value, error=cap(outcome.error), finished_at=self.now_expr())
            ).rowcount
            if not ended:
                return False
            now = conn.execute(self.now_query()).scalar_one()
            row = {
                "schedule_id": claim.schedule_id,
                "scheduled_for": claim.scheduled_for,
                "rerun": True,
                "overlap": claim.backfill_overlap or "buffer_all",
                "created_at": now,
            }
            conn.execute(self.insert_ignore(backfills), [row])
            self._notify(conn)
        return True

    def _take_of(self, conn: Connection, schedule_id: int, limit: int, node_id: str) -> list[Claim]:
        """Take the queued fires of one schedule that may start now (under its row's lock)."""
        # A row another session holds locked is passed over, not waited for (this runs in the
        # loop): its queued fires stay for the next take, about a second later.
        row = conn.execute(
            select(schedules).where(schedules.c.id == schedule_id).with_for_update(skip_locked=True)
        ).first()
        if row is None:
            return []  # removed meanwhile (its queue rows went with it), or locked elsewhere
        spec = spec_from_row(row._mapping)
        running = int(
            conn.scalar(
                select(func.count())
                .select_from(runs)
                .where(runs.c.schedule_id == schedule_id, runs.c.status == "running")
            )
            or 0
        )
        # The start time is read after the count: a previous run whose end the count saw ended
        # before it (read first, a run's recorded start could precede the end that let it start).
        now = conn.execute(self.now_query()).scalar_one()
        queued = conn.execute(
            select(backfills.c.id, backfills.c.scheduled_for, backfills.c.rerun, backfills.c.overlap)
            # Never early, whoever queued it: a time not yet passed waits (it is the schedule's own).
            .where(
                backfills.c.schedule_id == schedule_id,
                backfills.c.scheduled_for <= bindparam("b_now", now, type_=UTCDateTime),
            )
            .order_by(backfills.c.scheduled_for, backfills.c.id)
            .limit(limit)
        ).all()
        count = backfill_takeable([q.overlap for q in queued], running, spec.max_concurrent)
        taken: list[Claim] = []
        for q in queued[:count]:
            gone = conn.execute(delete(backfills).where(backfills.c.id == q.id)).rowcount
            if not gone:
                break  # another node took it: what follows it waits for the next pass
            attempt = self._next_attempt(conn, schedule_id, q.scheduled_for, rerun=bool(q.rerun))
            if attempt is None:
                continue  # run meanwhile (its regular fire, another backfill)
            run_id = self._open_run(conn, schedule_id, q.scheduled_for, attempt, node_id, now)
            if run_id is None:
                continue
            taken.append(
                Claim(
                    schedule_id, spec, q.scheduled_for, row.claim_seq, now, run_id, attempt, backfill_overlap=q.overlap
                )
            )
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
            # The definition the schedule has as the backfilled fire starts.
            "version": select(schedules.c.version).where(schedules.c.id == schedule_id).scalar_subquery(),
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
