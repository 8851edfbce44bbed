"""A retry's next attempt opened under its claim's fence (:meth:`tickwork.abc.Store.start_attempt`).

The schedule row must still be ``running`` under the claim's token (``claim_seq``): a claim taken
over, released as dead or claimed again elsewhere opens nothing; the claim's ``claimed_at`` is set
to the database clock, as a start sets it (:mod:`.starting`). The history's uniqueness on
(schedule, fire time, attempt) makes the call idempotent: asked again after an answer was lost, it
returns the row it opened before."""

from __future__ import annotations

from sqlalchemy import Integer, bindparam, literal, select, update
from sqlalchemy.exc import IntegrityError

from ..structures import Claim
from .rowlocks import lock_held_row
from .schema import UTCDateTime, runs, schedules
from .storecore import SQLCore


class Attempts(SQLCore):
    """:meth:`tickwork.abc.Store.start_attempt` on SQL."""

    def start_attempt(self, node_id: str, claim: Claim) -> int | None:
        if not self.features.insert_ignore_returning:
            return self._start_attempt_then_read(node_id, claim)
        fenced = select(
            schedules.c.id,
            literal(claim.scheduled_for, UTCDateTime),
            literal(claim.attempt),
            schedules.c.claim_seq,
            literal(node_id),
            self.now_expr(),
            literal("running"),
            literal(claim.version, Integer),
        ).where(
            schedules.c.id == claim.schedule_id,
            schedules.c.claim_seq == claim.claim_seq,
            schedules.c.state == "running",
        )
        held = (schedules.c.id == claim.schedule_id, schedules.c.claim_seq == claim.claim_seq)
        with self._tx() as conn:
            # Not waited for while another session holds the row locked (RowLockedError): the
            # retry is asked again in a moment, and the loop goes on meanwhile.
            if lock_held_row(conn, claim.spec.name, *held, schedules.c.state == "running") is None:
                return None
            conn.execute(update(schedules).where(*held).values(claimed_at=self.now_expr()))
            run_id = conn.execute(
                self.insert_ignore(runs)
                .from_select(
                    ["schedule_id", "scheduled_for", "attempt", "claim_seq", "node", "started_at", "status", "version"],
                    fenced,
                )
                .returning(runs.c.id)
            ).scalar()
            if run_id is None:
                # Opened before under this very claim (the answer was lost): the same attempt.
                run_id = conn.execute(
                    select(runs.c.id).where(
                        runs.c.schedule_id == claim.schedule_id,
                        runs.c.scheduled_for == claim.scheduled_for,
                        runs.c.attempt == claim.attempt,
                        runs.c.claim_seq == claim.claim_seq,
                        runs.c.node == node_id,
                        runs.c.status == "running",
                        fenced.exists(),
                    )
                ).scalar()
        return None if run_id is None else int(run_id)

    def _start_attempt_then_read(self, node_id: str, claim: Claim) -> int | None:
        """:meth:`start_attempt` without an ``INSERT`` that skips duplicates in ``RETURNING``:
        the fence is read and locked first, the run inserted plainly, a duplicate read back."""
        with self._tx() as conn:
            now = conn.execute(self.now_query()).scalar_one()
            held = (schedules.c.id == claim.schedule_id, schedules.c.claim_seq == claim.claim_seq)
            seq = lock_held_row(conn, claim.spec.name, *held, schedules.c.state == "running")
            conn.execute(
                update(schedules).where(*held).values(claimed_at=bindparam("renewed_at", now, type_=UTCDateTime))
            )
            if seq is None:
                return None
            run = {
                "schedule_id": claim.schedule_id,
                "scheduled_for": claim.scheduled_for,
                "attempt": claim.attempt,
                "claim_seq": seq,
                "node": node_id,
                "started_at": now,
                "status": "running",
                "version": claim.version,
            }
            # A plain INSERT in a savepoint: a duplicate fails only this statement, and tells
            # "already recorded" apart from "inserted", which an upsert's row count does not
            # (MySQL under CLIENT_FOUND_ROWS).
            try:
                with conn.begin_nested():
                    inserted = conn.execute(runs.insert().values(**run))
            except IntegrityError:
                # Opened before under this very claim (the answer was lost): the same attempt.
                again = conn.scalar(
                    select(runs.c.id).where(
                        runs.c.schedule_id == claim.schedule_id,
                        runs.c.scheduled_for == claim.scheduled_for,
                        runs.c.attempt == claim.attempt,
                        runs.c.claim_seq == seq,
                        runs.c.node == node_id,
                        runs.c.status == "running",
                    )
                )
                return None if again is None else int(again)
            key = inserted.inserted_primary_key
            return None if key is None else int(key[0])
