"""``advisory`` — read due candidates without locks, then take each with
a transaction-scoped try-lock inside the conditional UPDATE (the store's
:meth:`~tickwork.sql.claims.ClaimSQL.try_lock_row`, ``pg_try_advisory_xact_lock`` on PostgreSQL);
a row whose lock another node holds is passed over instead of waited for. The locks end with the
transaction: only for databases whose store offers such a lock. A row lock another transaction
holds (a stray ``SELECT ... FOR UPDATE``) is claimed around too (:func:`~.base.not_locked_elsewhere`)."""

from __future__ import annotations

from sqlalchemy import Connection, Update, update

from ..schema import schedules
from .base import ClaimRequest, ClaimStrategy, among_candidates, claim_assignment, due_filter, not_locked_elsewhere


class AdvisoryClaim(ClaimStrategy):
    name = "advisory"
    reads_first = True

    def take(self, conn: Connection, req: ClaimRequest) -> Update:
        lock = req.sql.try_lock_row(schedules.c.id)
        taken = not_locked_elsewhere(req, among_candidates(req))
        return update(schedules).where(taken, due_filter(req), lock).values(**claim_assignment(req))
