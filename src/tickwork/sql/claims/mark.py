"""``mark`` — Docspell's PeriodicScheduler: mark the earliest due schedule with this node's id,
one per transaction; the finish unmarks it. Fixed against the measured flaw of the original (it
guarded only on "no worker holds it"): the marking UPDATE re-checks due-ness too. ~1 statement and
1 commit per fire — the slowest strategy, kept for comparison."""

from __future__ import annotations

from sqlalchemy import Connection, Update, select, update

from ..schema import schedules
from .base import ClaimRequest, ClaimStrategy, claim_assignment, due_filter


class MarkClaim(ClaimStrategy):
    name = "mark"
    one_per_transaction = True

    def take(self, conn: Connection, req: ClaimRequest) -> Update:
        # Passing over a row another transaction holds locked (SKIP LOCKED; SQLite: none) instead
        # of waiting for it: the next earliest is marked (:func:`.base.not_locked_elsewhere`).
        earliest = (
            select(schedules.c.id)
            .where(due_filter(req))
            .order_by(schedules.c.next_fire)
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        return update(schedules).where(schedules.c.id == earliest, due_filter(req)).values(**claim_assignment(req))
