"""The backfill queue of a :class:`~tickwork.testing.MemoryStore` (the in-memory twin of
``tickwork_backfills``: :mod:`tickwork.sql.backfilling`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from contextlib import _GeneratorContextManager
from datetime import datetime
from typing import TYPE_CHECKING

from ..structures import Claim, RunStatus, bucket_of, utc
from .memory_rows import RunRow, ScheduleRow


class MemoryBackfills:
    """Queued fire times: ``(schedule id, fire time) -> rerun``, taken earliest first."""

    if TYPE_CHECKING:
        _schedules: dict[int, ScheduleRow]
        _runs: dict[int, RunRow]
        _run_ids: itertools.count[int]

        def _tx(self) -> _GeneratorContextManager[datetime]: ...
        def _row(self, name: str) -> ScheduleRow: ...
        def _insert_run(self, run: RunRow) -> int | None: ...
        def _notify(self) -> None: ...

    _queued: dict[tuple[int, datetime], bool]

    def _init_backfills(self) -> None:
        self._queued = {}

    def _drop_backfills(self, schedule_id: int) -> None:
        """A removed schedule's queued times go with it."""
        for key in [k for k in self._queued if k[0] == schedule_id]:
            del self._queued[key]

    def queue_backfill(self, name: str, times: Sequence[datetime], *, rerun: bool = False) -> list[datetime]:
        with self._tx():
            row = self._row(name)
            ran = set() if rerun else self._ran(row.id)
            wanted = [utc(t) for t in times if utc(t) not in ran]
            for moment in wanted:
                self._queued.setdefault((row.id, moment), rerun)
            if wanted:
                self._notify()
            return wanted

    def _ran(self, schedule_id: int) -> set[datetime]:
        """The fire times of the schedule the history holds a run of (not only a skipped one)."""
        return {
            r.scheduled_for
            for r in self._runs.values()
            if r.schedule_id == schedule_id and r.status is not RunStatus.SKIPPED
        }

    def take_backfills(self, node_id: str, *, limit: int, buckets: Sequence[int] | None) -> list[Claim]:
        owned: Callable[[ScheduleRow], bool] = (
            (lambda row: True) if buckets is None else (lambda row: bucket_of(row.spec.name) in set(buckets))
        )
        with self._tx() as now:
            order = sorted(self._queued, key=lambda key: (key[1], key[0]))
            taken: list[Claim] = []
            for schedule_id, moment in order:
                if len(taken) >= limit:
                    break
                row = self._schedules.get(schedule_id)
                if row is None or not owned(row):
                    continue
                rerun = self._queued.pop((schedule_id, moment))
                attempts = [
                    r for r in self._runs.values() if r.schedule_id == schedule_id and r.scheduled_for == moment
                ]
                if attempts and not rerun and any(r.status is not RunStatus.SKIPPED for r in attempts):
                    continue  # it ran meanwhile
                attempt = max((r.attempt for r in attempts), default=0) + 1
                run = RunRow(next(self._run_ids), schedule_id, moment, attempt, None, node_id, RunStatus.RUNNING, now)
                run_id = self._insert_run(run)
                if run_id is not None:
                    taken.append(Claim(schedule_id, row.spec, moment, row.claim_seq, now, run_id, attempt))
            return taken
