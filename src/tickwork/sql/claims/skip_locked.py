"""``skip-locked`` — one statement: UPDATE the rows of a ``FOR UPDATE SKIP LOCKED`` sub-select.
Concurrent nodes never wait on or lose to each other's rows, so nothing is wasted as nodes are
added (db-scheduler's lock-and-fetch, APScheduler 4, pgqueuer). For databases with
``SKIP LOCKED`` that can UPDATE from a CTE over the same table (PostgreSQL)."""

from __future__ import annotations

from sqlalchemy import Connection, Update, any_, func, select, update

from ..schema import schedules
from .base import ClaimRequest, ClaimStrategy, claim_assignment, due_ids


class SkipLockedClaim(ClaimStrategy):
    name = "skip-locked"

    def take(self, conn: Connection, req: ClaimRequest) -> Update:
        locked = req.sql.materialized(
            due_ids(req)
            .with_for_update(skip_locked=True)
            # Materialized: as a plain IN (sub-select) PostgreSQL's planner may run the LIMIT
            # more than once and claim more rows than asked (seen in tests: limit 1 claimed 2).
            .cte("locked")
        )
        # No second due filter here: FOR UPDATE re-evaluates the CTE's WHERE on the newest version
        # of each row it locks, and the lock keeps it so. Repeating it let the planner, on a low
        # row estimate, drive the join from the due index and rescan the CTE per due row
        # (236 ms for one claim of 100 with 10,000 due; 3 ms without; docs/benchmarks.md).
        # By id = ANY(ARRAY(SELECT ... FROM locked)): the ids become one array and each row is
        # found through the primary key. As a join, on a table of tens of thousands of rows the
        # planner hashed the CTE and scanned the whole table for every claim (2-3 ms of a 4 ms
        # claim of 100 with 10,000 due; docs/benchmarks.md).
        ids = func.array(select(locked.c.id).scalar_subquery())
        return update(schedules).where(schedules.c.id == any_(ids)).values(**claim_assignment(req))
