"""``unique-fire`` — Procrastinate's periodic deferrer: every node tries to insert the run row for
(schedule, fire time) straight from the due rows; the history's uniqueness rule picks the winner
(``ON CONFLICT DO NOTHING``), which then marks its schedules running. Losers waste an insert."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Insert, delete, literal, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite

from ..schema import runs, schedules
from .base import ClaimedRow, ClaimRequest, ClaimStrategy, claim_assignment, due_filter


def _insert(dialect: str) -> Any:
    return postgresql.insert(runs) if dialect == "postgresql" else sqlite.insert(runs)


class UniqueFireClaim(ClaimStrategy):
    name = "unique-fire"
    dialects = frozenset({"sqlite", "postgresql"})

    def claim(self, conn: Connection, req: ClaimRequest) -> list[ClaimedRow]:
        candidates = (
            select(
                schedules.c.id,
                schedules.c.next_fire,
                literal(1),
                schedules.c.claim_seq + 1,
                literal(req.node_id),
                req.now,
                literal("running"),
            )
            .where(due_filter(req))
            .order_by(schedules.c.next_fire)
            .limit(req.limit)
        )
        stmt: Insert = (
            _insert(conn.dialect.name)
            .from_select(
                ["schedule_id", "scheduled_for", "attempt", "claim_seq", "node", "started_at", "status"],
                candidates,
            )
            .on_conflict_do_nothing()
            .returning(runs.c.id, runs.c.schedule_id, runs.c.scheduled_for)
        )
        won = conn.execute(stmt).all()
        if not won:
            return []
        run_of = {r.schedule_id: r.id for r in won}
        rows = conn.execute(
            update(schedules)
            .where(
                tuple_(schedules.c.id, schedules.c.next_fire).in_([(r.schedule_id, r.scheduled_for) for r in won]),
                due_filter(req),
            )
            .values(**claim_assignment(req))
            .returning(*schedules.c)
        ).all()
        lost = set(run_of) - {row.id for row in rows}
        if lost:
            # Changed between the insert and the update (e.g. disabled): that fire did not happen.
            conn.execute(delete(runs).where(runs.c.id.in_([run_of[s] for s in lost])))
        return [ClaimedRow(row, run_of[row.id]) for row in rows]
