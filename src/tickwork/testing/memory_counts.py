"""What a :class:`~tickwork.testing.MemoryStore` counts at a fire's end for the schedules that ask:
consecutive failures (``pause_after_failures``) and fires that ran (``max_runs``), as
:mod:`tickwork.sql.pausing` does in the ends' transaction."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from ..structures import FAILING, PAUSED_BY_TICKWORK, Finish, Pause, RunStatus, ScheduleVersion, failures_note
from .memory_rows import RunRow, ScheduleRow


class MemoryCounts:
    """The counters of a fire's end (called under the store's lock)."""

    if TYPE_CHECKING:
        _schedules: dict[int, ScheduleRow]
        _by_name: dict[tuple[str, str], int]
        _runs: dict[int, RunRow]
        _versions: dict[int, list[ScheduleVersion]]

        def _delete_run(self, run_id: int) -> None: ...
        def _drop_backfills(self, schedule_id: int) -> None: ...

    @staticmethod
    def _count_failure(row: ScheduleRow, f: Finish, now: datetime) -> None:
        """``pause_after_failures`` (as :meth:`tickwork.sql.pausing.Pausing._count_failures`)."""
        limit = f.claim.spec.pause_after_failures
        if limit is None:
            return
        if f.outcome.status is RunStatus.SUCCEEDED:
            row.failures = 0
        elif f.outcome.status in FAILING:
            row.failures += 1
            if row.failures >= limit and row.spec.enabled:
                row.spec = replace(row.spec, enabled=False)
                row.choose_next_fire(None)
                row.pause = Pause(failures_note(limit), by=PAUSED_BY_TICKWORK, at=now)

    @staticmethod
    def _count_run(row: ScheduleRow, f: Finish) -> bool:
        """``max_runs`` (as :meth:`tickwork.sql.pausing.Pausing._count_runs`); true: remove it."""
        limit = f.claim.spec.max_runs
        if limit is None or f.outcome.status not in (RunStatus.SUCCEEDED, *FAILING):
            return False
        row.run_count += 1
        if row.run_count < limit:
            return False
        if f.claim.spec.on_finish.removes:
            return True
        row.choose_next_fire(None)
        row.fire_requested_at = None
        return False

    def _remove_finished(self, row: ScheduleRow) -> None:
        for run in [r for r in self._runs.values() if r.schedule_id == row.id]:
            self._delete_run(run.id)
        del self._schedules[row.id], self._by_name[row.spec.key]
        self._versions.pop(row.id, None)
        self._drop_backfills(row.id)
