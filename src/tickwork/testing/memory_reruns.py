"""Reruns of fires abandoned with their node in a :class:`~tickwork.testing.MemoryStore`
(``on_abandon = "rerun"``), the same rule as :mod:`tickwork.sql.rerunning` under the store's lock."""

from __future__ import annotations

from dataclasses import replace

from ..structures import Claim, RunStatus, ScheduleState, cap_error, rerun_refusal
from .memory_rows import RunRow
from .memory_tables import MemoryTables


class MemoryReruns(MemoryTables):
    """:meth:`tickwork.abc.Store.start_rerun` in memory."""

    def start_rerun(self, node_id: str, claim: Claim, *, grace: float, max_attempt: int) -> Claim | None:
        with self._tx() as now:
            row = self._held(claim)
            if row is None or row.claimed_by != node_id or row.state is not ScheduleState.RUNNING:
                return None
            attempts = [
                r
                for r in self._runs.values()
                if r.schedule_id == claim.schedule_id and r.scheduled_for == claim.scheduled_for
            ]
            if not attempts:
                return None
            latest = max(attempts, key=lambda r: r.attempt)
            if (
                latest.attempt > 1
                and latest.status is RunStatus.RUNNING
                and (latest.claim_seq, latest.node) == (claim.claim_seq, node_id)
            ):
                return replace(claim, attempt=latest.attempt, run_id=latest.id)  # an answer lost before
            if latest.status is not RunStatus.ABANDONED:
                return None
            late = (now - claim.scheduled_for).total_seconds()
            refusal = rerun_refusal(attempt=latest.attempt, late=late, grace=grace, max_attempt=max_attempt)
            if refusal is not None:
                error = latest.error or ""
                if "not rerun:" not in error:
                    latest.error = cap_error(f"{error}; {refusal}" if error else refusal)
                return None
            run_id = self._insert_run(
                RunRow(
                    id=next(self._run_ids),
                    schedule_id=claim.schedule_id,
                    scheduled_for=claim.scheduled_for,
                    attempt=latest.attempt + 1,
                    claim_seq=claim.claim_seq,
                    node=node_id,
                    status=RunStatus.RUNNING,
                    started_at=now,
                )
            )
            return None if run_id is None else replace(claim, attempt=latest.attempt + 1, run_id=run_id)
