"""``unique-fire`` — Procrastinate's periodic deferrer: every node tries to insert the run row for
(schedule, fire time) of each due candidate; the history's uniqueness rule picks the winner
(``ON CONFLICT DO NOTHING``), which then marks its schedules running. Losers waste a read and an
insert. 3 statements per batch.

A candidate whose insert conflicts but which is still idle at the same fire time is a stale fire
(its run was abandoned and the schedule released): it is claimed without a run, so the engine
advances it instead of leaving it due forever.
"""

from __future__ import annotations

from sqlalchemy import Connection, delete, literal, select, tuple_, update

from ..schema import runs, schedules
from .base import (
    CLAIMED_COLUMNS,
    RUN_COLUMNS,
    ClaimedRow,
    ClaimRequest,
    ClaimStrategy,
    claim_assignment,
    due_filter,
    not_locked_elsewhere,
    started_runs,
)


class UniqueFireClaim(ClaimStrategy):
    name = "unique-fire"
    single_update = False

    def claim(self, conn: Connection, req: ClaimRequest) -> list[ClaimedRow]:
        candidates = conn.execute(
            select(schedules.c.id, schedules.c.next_fire)
            .where(due_filter(req))
            .order_by(schedules.c.next_fire)
            .limit(req.limit)
            # FOR KEY SHARE SKIP LOCKED: passes over a row another session holds FOR UPDATE (a
            # stray SELECT ... FOR UPDATE), whose run insert would wait on it (the history's
            # foreign key share-locks the schedule row). Other claimers' key-share and
            # no-key-update locks do not conflict with it: nodes still race by the insert.
            .with_for_update(read=True, key_share=True, skip_locked=True)
        ).all()
        if not candidates:
            return []
        ids = [c.id for c in candidates]
        # INSERT ... SELECT over the candidates' ids: one statement text whatever the batch (a
        # multi-row VALUES list was compiled afresh for every batch: 30 % of a node's CPU).
        fires = started_runs(
            schedules.c.id,
            schedules.c.next_fire,
            schedules.c.claim_seq + 1,
            literal(req.node_id),
            req.now,
            schedules.c.version,
        ).where(schedules.c.id.in_(ids), due_filter(req))
        won = conn.execute(
            req.sql.insert_ignore(runs).from_select(list(RUN_COLUMNS), fires).returning(runs.c.id, runs.c.schedule_id)
        ).all()
        run_of = {r.schedule_id: r.id for r in won}
        rows = conn.execute(
            update(schedules)
            .where(
                tuple_(schedules.c.id, schedules.c.next_fire).in_([(c.id, c.next_fire) for c in candidates]),
                due_filter(req),
                # Not waiting for a row another session's UPDATE holds (FOR NO KEY UPDATE, which
                # the key-share read above lets through): its run is deleted as lost below.
                not_locked_elsewhere(req, schedules.c.id.in_(ids), key_share=True),
            )
            .values(**claim_assignment(req))
            .returning(*CLAIMED_COLUMNS)
        ).all()
        lost = set(run_of) - {row.id for row in rows}
        if lost:
            # Changed between the insert and the update (e.g. disabled): that fire did not happen.
            conn.execute(delete(runs).where(runs.c.id.in_([run_of[s] for s in lost])))
        # Rows taken without a run of ours are stale fires (see module doc); the store's run insert
        # will find the existing run and hand them over without a run id.
        return [ClaimedRow(row, run_of.get(row.id)) for row in rows]
