"""The memory store's hand-off records (:meth:`tickwork.abc.Store.report_handoff` and
:meth:`~tickwork.abc.Store.pending_handoffs`), as the SQL stores keep them."""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta

from ..errors import ScheduleNotFoundError
from ..structures import DEFAULT_NAMESPACE, HANDOFF_OPEN, RunRecord, RunStatus, ScheduleKey, cap_error, cap_worker
from .memory_tables import MemoryTables


class MemoryHandoffs(MemoryTables):
    """Hand-off reports fenced by the run's status, and the pending hand-off of a schedule."""

    def report_handoff(
        self,
        run_id: int,
        status: RunStatus,
        *,
        expect: Collection[RunStatus],
        error: str | None = None,
        worker: str | None = None,
    ) -> tuple[bool, RunStatus | None]:
        with self._tx() as now:
            run = self._runs.get(run_id)
            if run is None:
                return False, None
            if run.status not in expect:
                return False, run.status
            run.status, run.error = status, cap_error(error)
            if worker is not None:
                run.worker = cap_worker(worker)
            if status is RunStatus.STARTED:
                run.started_at, run.finished_at = now, None
            else:
                run.finished_at = now
            return True, status

    def pending_handoffs(self, keys: Collection[ScheduleKey], report_timeout: float) -> dict[ScheduleKey, RunRecord]:
        found: dict[ScheduleKey, RunRecord] = {}
        with self._tx() as now:
            cutoff = now - timedelta(seconds=report_timeout)
            for namespace, name in set(keys):
                sid = self._by_name.get((namespace, name))
                if sid is None:
                    continue
                pending = [r for r in self._runs.values() if r.schedule_id == sid and r.status in HANDOFF_OPEN]
                for run in pending:
                    # Submitted: finished_at is the hand-off; started: started_at is the worker's start.
                    since = run.finished_at or run.started_at
                    if since is not None and since < cutoff:
                        run.end(
                            RunStatus.TIMED_OUT,
                            f"no report from the queue's worker within report_timeout = {report_timeout:g}s",
                            now,
                        )
                left = [r for r in pending if r.status in HANDOFF_OPEN]
                if left:
                    found[(namespace, name)] = max(left, key=lambda r: r.id).public(name, namespace)
        return found

    def mark_stuck_handoffs(self, executor: str, pickup_timeout: float, note: str, limit: int = 100) -> list[RunRecord]:
        with self._tx() as now:
            cutoff = now - timedelta(seconds=pickup_timeout)
            names = {sid: row.spec.key for sid, row in self._schedules.items() if row.spec.executor == executor}
            marked: list[RunRecord] = []
            for run in sorted(self._runs.values(), key=lambda r: r.id):
                if len(marked) >= limit:
                    break
                if (
                    run.schedule_id in names
                    and run.status is RunStatus.SUBMITTED
                    and run.error is None
                    and run.finished_at is not None
                    and run.finished_at < cutoff
                ):
                    run.error = cap_error(note)
                    marked.append(run.public(names[run.schedule_id][1], names[run.schedule_id][0]))
            return marked

    def release_handoffs(self, schedule: str, reason: str, *, namespace: str = DEFAULT_NAMESPACE) -> list[RunRecord]:
        with self._tx() as now:
            sid = self._by_name.get((namespace, schedule))
            if sid is None:
                raise ScheduleNotFoundError(schedule)
            released: list[RunRecord] = []
            for run in sorted(self._runs.values(), key=lambda r: r.id):
                if run.schedule_id == sid and run.status is RunStatus.SUBMITTED:
                    run.end(RunStatus.CANCELLED, reason, now)
                    released.append(run.public(schedule, namespace))
            return released
