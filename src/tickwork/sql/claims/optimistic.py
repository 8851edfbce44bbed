"""``optimistic`` — FTL's StartCronJobs: read due candidates without locks, then one conditional
batch UPDATE that re-checks due-ness and returns the rows this node won. 2 statements per batch;
under contention losers waste their read. The UPDATE claims around a row another transaction holds
locked instead of waiting for it (:func:`~.base.not_locked_elsewhere`)."""

from __future__ import annotations

from sqlalchemy import Connection, Update, update

from ..schema import schedules
from .base import ClaimRequest, ClaimStrategy, among_candidates, claim_assignment, due_filter, not_locked_elsewhere


class OptimisticClaim(ClaimStrategy):
    name = "optimistic"
    reads_first = True

    def take(self, conn: Connection, req: ClaimRequest) -> Update:
        taken = not_locked_elsewhere(req, among_candidates(req))
        return update(schedules).where(taken, due_filter(req)).values(**claim_assignment(req))
