"""Fenced starts of fires claimed ahead of their time, and the takeover of those that did not
start by their deadline (docs/claim-protocol.md, invariant 4).

A fire claimed ahead (``lookahead``) is a schedule row ``running`` whose ``claimed_at`` is before
its ``next_fire``: the claim was made, the fire has not started. Starting it sets ``claimed_at``
to the database clock (at or after the fire time), in one statement for every fire a pass of the
loop starts, and only while the fire's deadline (``next_fire`` plus the start grace) has not
passed. The takeover gives back every such row whose deadline passed. Both statements change the
same row and each re-checks the other's condition on the row version it writes, so exactly one of
them wins: a frozen, cut-off or slow holder can never start a fire that was taken over.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    Select,
    String,
    Update,
    and_,
    bindparam,
    case,
    delete,
    false,
    select,
    tuple_,
    update,
)

from ..structures import Claim
from .retry import log, transient_retry
from .rows import UNHELD
from .schema import runs, schedules
from .storecore import SQLCore

#: Claimed and not started: the claim was made before the fire time, and nothing has renewed it
#: since (a start or a renewal sets ``claimed_at`` to the clock, at or after the fire time).
UNSTARTED = and_(schedules.c.state == "running", schedules.c.claimed_at < schedules.c.next_fire)


@dataclass(frozen=True)
class LockHolders:
    """Who held row locks in the database when a locking read passed rows over as locked
    (:meth:`Starting.lock_holders`), each in words for a log line."""

    #: Sessions that are not tickwork's: a console, a report, another application.
    others: tuple[str, ...] = ()
    #: Tickwork's own sessions (``tickwork node n2's transaction``).
    tickwork: tuple[str, ...] = ()


def locked_rows(holders: LockHolders | None) -> tuple[int, str]:
    """The log level and the words for schedule rows a locking read passed over, by who held row
    locks just after (``None``: the database cannot tell). SKIP LOCKED also passes over rows the
    other nodes' claims, starts and ends hold for a few milliseconds (on MySQL/MariaDB even rows
    their scans only read): that is contention between tickwork's own transactions, normal under
    load, not worth a warning; a session of someone else's is."""
    if holders is None:
        return logging.WARNING, (
            "another transaction holds their schedules' rows locked (another database session's, or another "
            "tickwork node's: this database does not say whose)"
        )
    if holders.others:
        also = f" (and {', '.join(holders.tickwork)})" if holders.tickwork else ""
        return logging.WARNING, (
            f"another database session holds rows locked in this database: {'; '.join(holders.others)}{also}"
        )
    if holders.tickwork:
        return logging.INFO, (
            f"their schedules' rows were locked by {', '.join(holders.tickwork)}: contention between tickwork's "
            "own transactions, normal under load"
        )
    return logging.INFO, (
        "their schedules' rows were locked by a transaction that has ended since (most likely another node's "
        "claim, start or end: contention between tickwork's own transactions, normal under load)"
    )


def say_taken_over(names: Sequence[str]) -> None:
    """The warning of a takeover that gave back the fires of these schedules."""
    log.warning(
        "took over %d fire(s) claimed ahead that did not start by their deadline (their node died, froze, fell "
        "behind, or another session held their rows locked); they run now: %s",
        len(names),
        ", ".join(sorted(names)[:10]) + (" ..." if len(names) > 10 else ""),
    )


def started_at(now: ColumnElement[Any]) -> ColumnElement[Any]:
    """What a granted start (and every renewal of a started fire) sets ``claimed_at`` to: the
    later of the clock ``now`` and the fire's time. A start recorded ahead (within the lead) is
    then started too (not before its fire time, so never :data:`UNSTARTED`), and no takeover
    gives it back; a renewal before the fire time keeps it so."""
    return case((schedules.c.next_fire > now, schedules.c.next_fire), else_=now)


class Starting(SQLCore):
    """Fenced starts and the takeover of fires not started in time."""

    def _deadline(self, grace: ColumnElement[Any]) -> ColumnElement[Any]:
        return self._plus_seconds(schedules.c.next_fire, grace)

    def _fenced(self) -> ColumnElement[bool]:
        """The rows of the claims :meth:`_fence_params` binds: schedule ids with their fence tokens."""
        return tuple_(schedules.c.id, schedules.c.claim_seq).in_(bindparam("s_fences", expanding=True))

    def _fence_params(self, claims: Sequence[Claim]) -> dict[str, Any]:
        return {"s_fences": [(c.schedule_id, c.claim_seq) for c in claims]}

    def _startable(self) -> ColumnElement[bool]:
        """The fenced start's condition (its parameters: :meth:`_fence_params`, ``s_node``,
        ``s_grace``)."""
        now = self.now_expr()
        return and_(
            self._fenced(),
            schedules.c.claimed_by == bindparam("s_node", type_=String),
            UNSTARTED,
            # Not redefined since the claim (enabled, disabled, paused, a new trigger: the write
            # chose another next fire, rows.next_fire_values): the fire claimed under the old
            # definition is not started; the takeover gives it back at its deadline and the
            # release applies the new next fire.
            schedules.c.retimed == false(),
            # Due within the lead (the run itself never starts early: invariant 2), and never
            # past the deadline after which others take it.
            schedules.c.next_fire <= self._plus_seconds(now, bindparam("s_lead", type_=Float)),
            now <= self._deadline(bindparam("s_grace", type_=Float)),
        )

    def _started_at(self) -> ColumnElement[Any]:
        return started_at(self.now_expr())

    def _locked_ids(self, where: ColumnElement[bool]) -> Select[Any]:
        # SKIP LOCKED: a row another session holds (a stray FOR UPDATE, a long transaction) is
        # left for later instead of stalling the node's loop behind it. SQLite has no row locks.
        return select(schedules.c.id).where(where).with_for_update(skip_locked=True)

    def _start_statement(self) -> Update:
        startable = self._startable()
        return (
            update(schedules)
            .where(schedules.c.id.in_(self._locked_ids(startable).scalar_subquery()), startable)
            .values(claimed_at=self._started_at())
            .returning(schedules.c.id)
        )

    @transient_retry
    def start_held(self, node_id: str, claims: Sequence[Claim], grace: float, lead: float = 0.0) -> list[bool]:
        if not claims:
            return []
        params = {**self._fence_params(claims), "s_node": node_id, "s_grace": grace, "s_lead": lead}
        with self._tx() as conn:
            if self.features.update_returning:
                started = set(conn.scalars(self._statement("start_held", self._start_statement), params))
                self.statements += 1
            else:
                started = set(
                    conn.scalars(
                        self._statement("start_held/read", lambda: self._locked_ids(self._startable())), params
                    )
                )
                if started:
                    conn.execute(
                        update(schedules).where(schedules.c.id.in_(started)).values(claimed_at=self._started_at())
                    )
                self.statements += 2
            refused = [c.schedule_id for c in claims if c.schedule_id not in started]
            if refused:
                self._say_if_locked(conn, refused, params)
        return [c.schedule_id in started for c in claims]

    def _say_if_locked(self, conn: Connection, refused: list[int], params: dict[str, Any]) -> None:
        """Of the refused starts, say which were refused only because their rows were locked
        (startable by every other condition, read without a lock), and by whom
        (:func:`locked_rows`: a warning only when that was not tickwork's own contention)."""
        startable = select(schedules.c.name).where(schedules.c.id.in_(refused), self._startable())
        names = sorted(conn.scalars(startable, params))
        self.statements += 1
        if names:
            level, held = locked_rows(self.lock_holders(conn))
            log.log(
                level,
                "cannot start %d fire(s) claimed ahead (%s): %s; they are taken over and run once the lock is released",
                len(names),
                ", ".join(names[:10]) + (" ..." if len(names) > 10 else ""),
                held,
            )

    def lock_holders(self, conn: Connection) -> LockHolders | None:
        """Who holds row locks in this database now, read on ``conn`` right after a locking read
        passed rows over; ``None`` where the database cannot tell (the default). Called only
        then, never on a path where nothing was passed over."""
        return None

    def _overdue(self) -> ColumnElement[bool]:
        return and_(UNSTARTED, self._deadline(bindparam("t_grace", type_=Float)) < self.now_expr())

    def _take_over_statement(self) -> Update:
        overdue = self._overdue()
        return (
            update(schedules)
            .where(schedules.c.id.in_(self._locked_ids(overdue).scalar_subquery()), overdue)
            .values(**UNHELD)
            .returning(schedules.c.id, schedules.c.claim_seq, schedules.c.name)
        )

    @transient_retry
    def take_over_unstarted(self, grace: float) -> int:
        params = {"t_grace": grace}
        with self._tx() as conn:
            if self.features.update_returning:
                rows = conn.execute(self._statement("take_over", self._take_over_statement), params).all()
                self.statements += 1
            else:
                read = self._statement(
                    "take_over/read",
                    lambda: (
                        select(schedules.c.id, schedules.c.claim_seq, schedules.c.name)
                        .where(self._overdue())
                        .with_for_update(skip_locked=True)
                    ),
                )
                rows = conn.execute(read, params).all()
                self.statements += 1
                if rows:
                    conn.execute(update(schedules).where(schedules.c.id.in_([r.id for r in rows])).values(**UNHELD))
            if not rows:
                return 0
            self.forget_unstarted_runs(conn, [(r.id, r.claim_seq) for r in rows])
            self._notify(conn)
        say_taken_over([str(r.name) for r in rows])
        return len(rows)

    def forget_unstarted_runs(self, conn: Connection, fences: Sequence[tuple[int, int]]) -> None:
        """Delete the run rows of claims given back before they started (``(schedule id,
        claim_seq)``): as if the claim had never happened, so the fire's next claim records
        and runs it."""
        if fences:
            conn.execute(
                delete(runs).where(
                    tuple_(runs.c.schedule_id, runs.c.claim_seq).in_(list(fences)),
                    runs.c.status == "running",
                    runs.c.attempt == 1,
                    runs.c.started_at.is_(None),
                )
            )
