"""The backfill queue of a :class:`~tickwork.testing.MemoryStore` (the in-memory twin of
``tickwork_backfills``: :mod:`tickwork.sql.backfilling`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from contextlib import _GeneratorContextManager
from datetime import datetime
from typing import TYPE_CHECKING

from ..structures import (
    DEFAULT_NAMESPACE,
    Claim,
    Finish,
    Outcome,
    RunStatus,
    backfill_takeable,
    bucket_of,
    check_backfill_overlap,
    refuse_future_backfill,
    utc,
)
from .memory_rows import RunRow, ScheduleRow


class MemoryBackfills:
    """Queued fire times: ``(schedule id, fire time) -> (rerun, overlap)``, taken earliest first."""

    if TYPE_CHECKING:
        _schedules: dict[int, ScheduleRow]
        _runs: dict[int, RunRow]
        _run_ids: itertools.count[int]

        def _tx(self) -> _GeneratorContextManager[datetime]: ...
        def _row(self, name: str, namespace: str = ...) -> ScheduleRow: ...
        def _insert_run(self, run: RunRow) -> int | None: ...
        def _notify(self) -> None: ...

    #: ``(schedule id, fire time) -> (rerun, overlap)``
    _queued: dict[tuple[int, datetime], tuple[bool, str]]

    def _init_backfills(self) -> None:
        self._queued = {}

    def _drop_backfills(self, schedule_id: int) -> None:
        """A removed schedule's queued times go with it."""
        for key in [k for k in self._queued if k[0] == schedule_id]:
            del self._queued[key]

    def queue_backfill(
        self,
        name: str,
        times: Sequence[datetime],
        *,
        rerun: bool = False,
        overlap: str = "buffer_all",
        namespace: str = DEFAULT_NAMESPACE,
    ) -> list[datetime]:
        check_backfill_overlap(overlap)
        with self._tx() as now:
            row = self._row(name, namespace)
            refuse_future_backfill(name, times, now)
            ran = set() if rerun else self._ran(row.id)
            wanted = [utc(t) for t in times if utc(t) not in ran]
            for moment in wanted:
                self._queued.setdefault((row.id, moment), (rerun, overlap))
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

    def take_backfills(
        self,
        node_id: str,
        *,
        limit: int,
        buckets: Sequence[int] | None,
        namespaces: Sequence[str] | None = None,
        ends: Sequence[Finish] = (),
    ) -> list[Claim]:
        def owned(row: ScheduleRow) -> bool:
            if namespaces is not None and row.spec.namespace not in namespaces:
                return False
            return buckets is None or bucket_of(row.spec.name) in set(buckets)

        with self._tx() as now:
            # The ends first, in the same transaction (as end_attempt writes each).
            for finish in ends:
                run = self._runs.get(finish.claim.run_id) if finish.claim.run_id is not None else None
                if run is not None and run.status is RunStatus.RUNNING:
                    run.end(finish.outcome.status, finish.outcome.error, now)
                    if finish.started_at is not None:
                        run.started_at = utc(finish.started_at)
            # As the SQL store: schedule by schedule (earliest queued fire first), the leading
            # queued fires its backfills' overlap lets start beside its running runs.
            order = sorted(self._queued, key=lambda key: (key[1], key[0]))
            schedule_ids = list(dict.fromkeys(schedule_id for schedule_id, _ in order))
            taken: list[Claim] = []
            for schedule_id in schedule_ids:
                row = self._schedules.get(schedule_id)
                if len(taken) >= limit or row is None or not owned(row):
                    continue
                # Never early, as the SQL store: a queued time not yet passed waits.
                mine = [key for key in order if key[0] == schedule_id and key[1] <= now][: limit - len(taken)]
                running = sum(
                    1 for r in self._runs.values() if r.schedule_id == schedule_id and r.status is RunStatus.RUNNING
                )
                count = backfill_takeable([self._queued[key][1] for key in mine], running, row.spec.max_concurrent)
                for key in mine[:count]:
                    claim = self._take_one(row, key, node_id, now)
                    if claim is not None:
                        taken.append(claim)
            return taken

    def retry_backfill(self, claim: Claim, outcome: Outcome) -> bool:
        with self._tx() as now:
            run = self._runs.get(claim.run_id) if claim.run_id is not None else None
            if run is None or run.status is not RunStatus.RUNNING:
                return False
            run.end(outcome.status, outcome.error, now)
            self._queued.setdefault(
                (claim.schedule_id, claim.scheduled_for), (True, claim.backfill_overlap or "buffer_all")
            )
        self._notify()
        return True

    def _take_one(self, row: ScheduleRow, key: tuple[int, datetime], node_id: str, now: datetime) -> Claim | None:
        schedule_id, moment = key
        rerun, overlap = self._queued.pop(key)
        attempts = [r for r in self._runs.values() if r.schedule_id == schedule_id and r.scheduled_for == moment]
        if attempts and not rerun and any(r.status is not RunStatus.SKIPPED for r in attempts):
            return None  # it ran meanwhile
        attempt = max((r.attempt for r in attempts), default=0) + 1
        run = RunRow(next(self._run_ids), schedule_id, moment, attempt, None, node_id, RunStatus.RUNNING, now)
        run_id = self._insert_run(run)
        if run_id is None:
            return None
        return Claim(schedule_id, row.spec, moment, row.claim_seq, now, run_id, attempt, backfill_overlap=overlap)
