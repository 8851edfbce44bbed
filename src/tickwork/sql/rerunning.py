"""Reruns of fires abandoned with their node (``on_abandon = "rerun"``, docs/cluster.md#reruns).

A dead node's running runs are recorded ``abandoned`` and its schedules released with their next
fire unchanged (:mod:`.nodestate`), so the abandoned fire is claimed again; that claim comes back
without a run id (the history has the fire). :meth:`Rerunning.start_rerun` then opens the fire's
next attempt, in one transaction fenced three ways: the schedule row locked under the claim's
token (only its holder reruns it), the latest attempt read in that transaction (only an
``abandoned`` one is rerun), and the history's uniqueness on (schedule, fire time, attempt) as
the last word. The database clock decides whether the fire is still within its grace.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.exc import IntegrityError

from ..structures import Claim, RunStatus, cap_error, rerun_refusal, utc
from .retry import transient_retry
from .rowlocks import lock_held_row
from .schema import runs, schedules
from .storecore import SQLCore


class Rerunning(SQLCore):
    """:meth:`tickwork.abc.Store.start_rerun` on SQL."""

    @transient_retry
    def start_rerun(self, node_id: str, claim: Claim, *, grace: float, max_attempt: int) -> Claim | None:
        with self._tx() as conn:
            now = utc(conn.execute(self.now_query()).scalar_one())
            # The fence: this node still holds the claim. Locked (PostgreSQL, MySQL; SQLite
            # writes one at a time), so no release or takeover lands between the read and the
            # insert; not waited for while another session holds it (RowLockedError).
            held = lock_held_row(
                conn,
                claim.spec.name,
                schedules.c.id == claim.schedule_id,
                schedules.c.claim_seq == claim.claim_seq,
                schedules.c.claimed_by == node_id,
                schedules.c.state == "running",
            )
            self.statements += 2
            if held is None:
                return None
            latest = self._latest_attempt(conn, claim)
            if latest is None:
                return None
            if latest.attempt > 1 and self._opened_under(latest, claim, node_id):
                return replace(claim, attempt=latest.attempt, run_id=int(latest.id))  # an answer lost before
            if latest.status != RunStatus.ABANDONED.value:
                return None
            late = (now - utc(claim.scheduled_for)).total_seconds()
            refusal = rerun_refusal(attempt=latest.attempt, late=late, grace=grace, max_attempt=max_attempt)
            if refusal is not None:
                self._note(conn, latest, refusal)
                return None
            return self._open(conn, node_id, claim, latest.attempt + 1, now)

    def _latest_attempt(self, conn: Connection, claim: Claim) -> Any:
        self.statements += 1
        return conn.execute(
            select(runs.c.id, runs.c.attempt, runs.c.status, runs.c.claim_seq, runs.c.node, runs.c.error)
            .where(runs.c.schedule_id == claim.schedule_id, runs.c.scheduled_for == claim.scheduled_for)
            .order_by(runs.c.attempt.desc())
            .limit(1)
        ).first()

    @staticmethod
    def _opened_under(latest: Any, claim: Claim, node_id: str) -> bool:
        return bool(
            latest.status == RunStatus.RUNNING.value and latest.claim_seq == claim.claim_seq and latest.node == node_id
        )

    def _note(self, conn: Connection, latest: Any, refusal: str) -> None:
        """Append why the fire is not rerun to the abandoned row's error (once)."""
        error = latest.error or ""
        if "not rerun:" in error:
            return
        conn.execute(
            update(runs)
            .where(runs.c.id == latest.id, runs.c.status == RunStatus.ABANDONED.value)
            .values(error=cap_error(f"{error}; {refusal}" if error else refusal))
        )
        self.statements += 1

    def _open(self, conn: Connection, node_id: str, claim: Claim, attempt: int, now: datetime) -> Claim | None:
        """Insert the running row of ``attempt``; ``None`` if another session recorded it first."""
        row = {
            "schedule_id": claim.schedule_id,
            "scheduled_for": claim.scheduled_for,
            "attempt": attempt,
            "claim_seq": claim.claim_seq,
            "node": node_id,
            "started_at": now,
            "status": RunStatus.RUNNING.value,
            "version": claim.version,
        }
        self.statements += 1
        # A plain INSERT in a savepoint: a duplicate fails only this statement (the uniqueness
        # rule of invariant 1), and is told apart from an insert on every database.
        try:
            with conn.begin_nested():
                inserted = conn.execute(runs.insert().values(**row))
        except IntegrityError:
            return None
        key = inserted.inserted_primary_key
        if key is None:
            return None
        return replace(claim, attempt=attempt, run_id=int(key[0]))
