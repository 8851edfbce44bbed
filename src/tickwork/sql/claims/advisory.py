"""``advisory`` — read due candidates without locks, then take each with
``pg_try_advisory_xact_lock`` inside the conditional UPDATE; a row whose lock another node holds
is passed over instead of waited for. The locks end with the transaction. PostgreSQL only."""

from __future__ import annotations

from sqlalchemy import Connection, Integer, Update, cast, func, literal, select, update

from ..schema import schedules
from .base import ClaimRequest, ClaimStrategy, claim_assignment, due_filter

# First key of the two-key advisory lock space, so tickwork's locks cannot meet an application's.
LOCK_NAMESPACE = 0x7469636B  # "tick"


class AdvisoryClaim(ClaimStrategy):
    name = "advisory"
    reads_first = True
    dialects = frozenset({"postgresql"})

    def take(self, conn: Connection, req: ClaimRequest) -> Update | None:
        ids = conn.scalars(
            select(schedules.c.id).where(due_filter(req)).order_by(schedules.c.next_fire).limit(req.limit)
        ).all()
        if not ids:
            return None
        lock = func.pg_try_advisory_xact_lock(
            literal(LOCK_NAMESPACE, Integer), cast(schedules.c.id % 2147483647, Integer)
        )
        return update(schedules).where(schedules.c.id.in_(ids), due_filter(req), lock).values(**claim_assignment(req))
