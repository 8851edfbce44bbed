"""``optimistic`` — FTL's StartCronJobs: read due candidates without locks, then one conditional
batch UPDATE that re-checks due-ness and returns the rows this node won. 2 statements per batch;
under contention losers waste their read."""

from __future__ import annotations

from sqlalchemy import Connection, Update, update

from ..schema import schedules
from .base import ClaimRequest, ClaimStrategy, among_candidates, claim_assignment, due_filter


class OptimisticClaim(ClaimStrategy):
    name = "optimistic"
    reads_first = True

    def take(self, conn: Connection, req: ClaimRequest) -> Update:
        return update(schedules).where(among_candidates(req), due_filter(req)).values(**claim_assignment(req))
