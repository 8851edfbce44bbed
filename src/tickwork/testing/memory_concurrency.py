"""The concurrency part of :class:`~tickwork.testing.MemoryStore`: admitting claimed fires under
``max_concurrent`` and concurrency keys, and ending runs that outlive their claim
(``tickwork.sql.concurrency`` in plain Python; the store's one lock makes each admission atomic,
as the SQL store's row locks do)."""

from __future__ import annotations

from collections.abc import Sequence

from ..structures import ADMISSION_FENCED, Admission, Finish, RunStatus, cap_error, utc
from .memory_counts import MemoryCounts
from .memory_rows import RunRow
from .memory_tables import MemoryTables, aware


class MemoryConcurrency(MemoryCounts, MemoryTables):
    """``admit`` and ``end_detached`` of the memory store."""

    def _init_concurrency(self) -> None:
        #: run id -> the concurrency key it was admitted under (``tickwork_runs.concurrency_key``).
        self._admitted: dict[int, str] = {}

    def _delete_run(self, run_id: int) -> None:
        self._admitted.pop(run_id, None)
        super()._delete_run(run_id)

    def admit(self, node_id: str, admission: Admission) -> str | None:
        claim = admission.claim
        spec = claim.spec
        with self._tx() as now:
            row = self._held(claim)
            if row is None or row.claimed_by != node_id:
                # Asked again after it was admitted (a SQL store's retry after a lost answer).
                run = self._runs.get(claim.run_id) if claim.run_id is not None else None
                again = run is not None and run.node == node_id and run.status is RunStatus.RUNNING
                return None if again and claim.run_id in self._admitted else ADMISSION_FENCED
            others = [r for r in self._runs.values() if r.status is RunStatus.RUNNING and r.id != claim.run_id]
            running = sum(1 for r in others if r.schedule_id == claim.schedule_id)
            key = spec.concurrency_key
            keyed = 0 if key is None else sum(1 for r in others if self._admitted.get(r.id) == key)
            namespaced = 0
            if admission.namespace_limit is not None:
                namespaced = sum(
                    1
                    for r in others
                    if r.id in self._admitted and self._schedules[r.schedule_id].spec.namespace == spec.namespace
                )
            refused = admission.refusal(running, keyed, namespaced)
            if refused is not None:
                return refused
            run = self._runs.get(claim.run_id) if claim.run_id is not None else None
            if run is not None:
                self._admitted[run.id] = key or ""
                run.started_at = now  # once admitted, as the SQL stores record it
            if admission.release:
                next_fire = row.released_next_fire(aware(admission.next_fire), now)
                row.fire_requested_at = None
                row.unhold()
                row.next_fire = next_fire
                for at, reason in admission.skipped:
                    self._insert_run(
                        RunRow(
                            id=next(self._run_ids),
                            schedule_id=row.id,
                            scheduled_for=utc(at),
                            attempt=1,
                            claim_seq=claim.claim_seq,
                            node=node_id,
                            status=RunStatus.SKIPPED,
                            finished_at=claim.claimed_at,
                            error=cap_error(reason),
                        )
                    )
                self._notify()
            return None

    def end_detached(self, node_id: str, finishes: Sequence[Finish]) -> list[bool]:
        with self._tx() as now:
            landed = []
            for f in finishes:
                run = self._runs.get(f.claim.run_id) if f.claim.run_id is not None else None
                if run is None or run.node != node_id:
                    landed.append(False)
                    continue
                if run.status is not RunStatus.RUNNING:
                    detail = f": {f.outcome.error}" if f.outcome.error else ""
                    note = f"finished ({f.outcome.status.value}) after its end was recorded{detail}"
                    run.error = cap_error(f"{run.error}\n{note}" if run.error else note)
                    landed.append(False)
                    continue
                run.end(f.outcome.status, f.outcome.error, utc(f.finished_at) if f.finished_at is not None else now)
                if f.started_at is not None:
                    run.started_at = utc(f.started_at)
                landed.append(True)
                row = self._schedules.get(f.claim.schedule_id)
                if row is not None:
                    self._count_failure(row, f, now)
                    if self._count_run(row, f):
                        self._remove_finished(row)
            return landed
