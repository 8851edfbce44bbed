"""``optimistic`` — FTL's StartCronJobs: read due candidates without locks, then one conditional
batch UPDATE that re-checks due-ness and returns the rows this node won. 2 statements per batch;
under contention losers waste their read."""

from __future__ import annotations

from sqlalchemy import Connection, Update, select, update

from ..schema import schedules
from .base import ClaimRequest, ClaimStrategy, claim_assignment, due_filter


class OptimisticClaim(ClaimStrategy):
    name = "optimistic"
    reads_first = True

    def take(self, conn: Connection, req: ClaimRequest) -> Update | None:
        ids = conn.scalars(
            select(schedules.c.id).where(due_filter(req)).order_by(schedules.c.next_fire).limit(req.limit)
        ).all()
        if not ids:
            return None
        return update(schedules).where(schedules.c.id.in_(ids), due_filter(req)).values(**claim_assignment(req))
