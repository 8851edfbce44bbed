"""The health role of the SQL store: the announced health states (``tickwork_health_announcements``)
claimed by conditional writes, and a schedule's whole failure streak counted by one indexed query
(:class:`tickwork.abc.healthrecords.HealthRecords`; docs/observability.md#health-changes)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from ..structures import FAILING, Announcement, AnnouncementClaim, RunRecord, Schedule
from .bulk import chunks
from .retry import transient_retry
from .schema import health_announcements, runs, schedules
from .storecore import SQLCore

_FAILING = sorted(s.value for s in FAILING)
_T = health_announcements


class HealthRecordsSQL(SQLCore):
    """:meth:`~tickwork.abc.Store.count_failures_since`, :meth:`~tickwork.abc.Store.announcements`,
    :meth:`~tickwork.abc.Store.all_announcements` and :meth:`~tickwork.abc.Store.claim_announcements`."""

    @transient_retry
    def count_failures_since(self, schedule: Schedule, success: RunRecord | None) -> int:
        # A range of the fire index (uq_tickwork_runs_fire: schedule_id, scheduled_for, attempt)
        # after the success, filtered by status: asked only for a schedule whose recent runs
        # hold no success, so the range is the streak itself plus its skipped fires.
        query = select(func.count()).where(runs.c.schedule_id == schedule.id, runs.c.status.in_(_FAILING))
        if success is not None:
            query = query.where(
                or_(
                    runs.c.scheduled_for > success.scheduled_for,
                    and_(runs.c.scheduled_for == success.scheduled_for, runs.c.attempt > success.attempt),
                )
            )
        with self._tx() as conn:
            return int(conn.scalar(query) or 0)

    @transient_retry
    def announcements(self, schedule_ids: Sequence[int]) -> dict[int, Announcement]:
        out: dict[int, Announcement] = {}
        with self._tx() as conn:
            for batch in chunks(sorted(set(schedule_ids))):
                out.update(_announced(conn.execute(select(_T).where(_T.c.schedule_id.in_(list(batch))))))
        return out

    @transient_retry
    def all_announcements(self) -> dict[int, Announcement]:
        # The table alone: a row goes with its schedule (ON DELETE CASCADE), so every row is a
        # stored schedule's, and its narrow rows cost far less to read than the schedules'.
        with self._tx() as conn:
            return _announced(conn.execute(select(_T)))

    @transient_retry
    def claim_announcements(self, claims: Sequence[AnnouncementClaim]) -> list[bool]:
        landed = [False] * len(claims)
        if not claims:
            return landed
        # In schedule order: two nodes claiming overlapping sets lock the rows in the same order
        # (no deadlock on MySQL/PostgreSQL, only one waits for the other).
        order = sorted(range(len(claims)), key=lambda i: claims[i].schedule_id)
        firsts = [i for i in order if claims[i].before is None]
        with self._tx() as conn:
            if firsts:
                for i, ok in zip(firsts, self._firsts(conn, [claims[i] for i in firsts]), strict=True):
                    landed[i] = ok
            for i in order:
                before = claims[i].before
                if before is not None:
                    landed[i] = self._next(conn, claims[i], before)
        return landed

    def _firsts(self, conn: Connection, claims: Sequence[AnnouncementClaim]) -> list[bool]:
        """The first announcements: one multi-row INSERT in a savepoint (a first sweep records
        every schedule's state: 2,000 rows one by one took 6 s on SQLite), and row by row only
        when it fails (another node inserted one of them meanwhile, or a schedule was removed)."""
        try:
            with conn.begin_nested():
                conn.execute(_T.insert(), [_first_values(claim) for claim in claims])
        except IntegrityError:
            return [self._first(conn, claim) for claim in claims]
        return [True] * len(claims)

    @staticmethod
    def _first(conn: Connection, claim: AnnouncementClaim) -> bool:
        """The first announcement of a schedule: a plain INSERT in a savepoint, so that a row
        another node inserted meanwhile fails this statement only, and "inserted" is told apart
        from "already there" (an upsert's row count does not tell them apart on MySQL under
        CLIENT_FOUND_ROWS; an INSERT ... SELECT's is -1 under psycopg). A schedule removed
        meanwhile is not announced: its row is read first, and the foreign key refuses the rest."""
        if conn.scalar(select(schedules.c.id).where(schedules.c.id == claim.schedule_id)) is None:
            return False
        try:
            with conn.begin_nested():
                conn.execute(_T.insert().values(**_first_values(claim)))
        except IntegrityError:
            return False
        return True

    @staticmethod
    def _next(conn: Connection, claim: AnnouncementClaim, before: Announcement) -> bool:
        """A later announcement: lands only on the version read (the fence)."""
        write = (
            update(_T)
            .where(_T.c.schedule_id == claim.schedule_id, _T.c.version == before.version)
            .values(
                state=claim.state,
                alerting=claim.alerting,
                since=before.since if claim.repeat else claim.at,
                announced_at=claim.at,
                version=_T.c.version + 1,
            )
        )
        return conn.execute(write).rowcount == 1


def _first_values(claim: AnnouncementClaim) -> dict[str, Any]:
    return {
        "schedule_id": claim.schedule_id,
        "state": claim.state,
        "alerting": claim.alerting,
        "since": claim.at,
        "announced_at": claim.at,
        "version": 0,
    }


def _announced(rows: Iterable[Any]) -> dict[int, Announcement]:
    return {
        row.schedule_id: Announcement(
            schedule_id=row.schedule_id,
            state=row.state,
            alerting=bool(row.alerting),
            since=row.since,
            at=row.announced_at,
            version=int(row.version),
        )
        for row in rows
    }
