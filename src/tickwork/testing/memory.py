"""``MemoryStore``: a complete :class:`~tickwork.abc.Store` in one process's memory.

It is the executable specification of docs/claim-protocol.md: every rule a SQL store keeps with
constraints and fenced statements is written here as plain Python under one lock, so a reader
can check a database store against it line by line, and users can test their jobs without a
database (``SchedulerHarness`` uses it by default).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from ..abc import Store
from ..errors import ConfigError, ScheduleExistsError, ScheduleNotFoundError, StoreError
from ..structures import (
    Claim,
    Finish,
    NodeInfo,
    Outcome,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleSpec,
    ScheduleState,
    utc,
)
from .memory_rows import RunRow, ScheduleRow, cap, stored_spec


def _aware(value: datetime | None) -> datetime | None:
    # A SQL store refuses naive datetimes when binding them; so does this one.
    return None if value is None else utc(value)


class MemoryStore(Store):
    """Schedules, claims and history in memory; thread-safe, gone when the process ends.

    :param clock: the "database clock" (e.g. a :class:`~tickwork.testing.FakeClock`); default:
        the system clock in UTC
    :param claim: the claim strategy; only ``lock`` (one lock makes every claim atomic)
    :param batch_size: most schedules claimed per call
    """

    claim_strategies = ("lock",)
    options = {"claim": str, "batch_size": int}

    def __init__(
        self, *, clock: Callable[[], datetime] | None = None, claim: str | None = None, batch_size: int = 100
    ) -> None:
        if claim not in (None, *self.claim_strategies):
            raise ConfigError(f"claim strategy {claim!r} is not supported by the memory store; it supports: lock")
        if batch_size < 1:
            raise ConfigError(f"batch_size: must be >= 1, got {batch_size}")
        self.clock = clock
        self.batch_size = batch_size
        self._lock = threading.RLock()
        self._open = False
        self._ids = itertools.count(1)
        self._run_ids = itertools.count(1)
        self._schedules: dict[int, ScheduleRow] = {}
        self._by_name: dict[str, int] = {}
        self._runs: dict[int, RunRow] = {}
        #: Invariant 1: (schedule, scheduled-for, attempt) -> the one run row for it.
        self._fires: dict[tuple[int, datetime, int], int] = {}
        self._nodes: dict[str, NodeInfo] = {}
        self._wakes: list[Callable[[], None]] = []

    # -- helpers ----------------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[datetime]:
        """One "transaction": the lock held, and one clock reading for all of it (like a SQL
        statement's clock)."""
        with self._lock:
            if not self._open:
                raise StoreError("memory store is not open; call open() first")
            yield self._clock()

    def _clock(self) -> datetime:
        return utc(self.clock()) if self.clock is not None else datetime.now(UTC)

    def _row(self, name: str) -> ScheduleRow:
        sid = self._by_name.get(name)
        if sid is None:
            raise ScheduleNotFoundError(name)
        return self._schedules[sid]

    def _notify(self) -> None:
        for wake in self._wakes:
            wake()

    def _insert_run(self, run: RunRow) -> int | None:
        """Insert unless its fire is already recorded (``ON CONFLICT DO NOTHING``)."""
        if run.fire in self._fires:
            return None
        self._runs[run.id] = run
        self._fires[run.fire] = run.id
        return run.id

    def _delete_run(self, run_id: int) -> None:
        run = self._runs.pop(run_id)
        del self._fires[run.fire]

    def _held(self, claim: Claim) -> ScheduleRow | None:
        """The claim's schedule if the claim still holds it (the fence of invariant 3)."""
        row = self._schedules.get(claim.schedule_id)
        if row is None or row.claim_seq != claim.claim_seq or row.state is not ScheduleState.RUNNING:
            return None
        return row

    # -- lifecycle --------------------------------------------------------------------------------

    def open(self, *, check_schema: bool = True) -> None:
        with self._lock:
            self._open = True

    def close(self) -> None:
        """Stop answering; the data stays (open() again sees it, like a database file)."""
        with self._lock:
            self._open = False
            self._wakes.clear()

    def upgrade(self) -> None:
        """Nothing to migrate: the in-memory layout is always current."""

    def now(self) -> datetime:
        with self._tx() as now:
            return now

    # -- schedules --------------------------------------------------------------------------------

    def add(self, spec: ScheduleSpec, next_fire: datetime | None) -> Schedule:
        with self._tx() as now:
            if spec.name in self._by_name:
                raise ScheduleExistsError(spec.name)
            row = ScheduleRow(next(self._ids), stored_spec(spec), _aware(next_fire), now, now)
            self._schedules[row.id] = row
            self._by_name[spec.name] = row.id
            self._notify()
            return row.public()

    def update(self, spec: ScheduleSpec, next_fire: datetime | None) -> Schedule:
        with self._tx() as now:
            row = self._row(spec.name)
            row.spec, row.next_fire, row.updated_at = stored_spec(spec), _aware(next_fire), now
            self._notify()
            return row.public()

    def get(self, name: str) -> Schedule:
        with self._tx():
            return self._row(name).public()

    def list_schedules(self, *, module: str | None = None) -> list[Schedule]:
        with self._tx():
            rows = sorted(self._schedules.values(), key=lambda r: r.spec.name)
            return [r.public() for r in rows if module is None or r.spec.module == module]

    def remove(self, name: str) -> None:
        with self._tx():
            row = self._row(name)
            for run in [r for r in self._runs.values() if r.schedule_id == row.id]:
                self._delete_run(run.id)
            del self._schedules[row.id], self._by_name[name]
            self._notify()

    def set_enabled(self, name: str, enabled: bool, next_fire: datetime | None) -> Schedule:
        with self._tx() as now:
            row = self._row(name)
            row.spec, row.next_fire, row.updated_at = replace(row.spec, enabled=enabled), _aware(next_fire), now
            self._notify()
            return row.public()

    def fire_now(self, name: str) -> Schedule:
        with self._tx() as now:
            row = self._row(name)
            if row.state is ScheduleState.IDLE:
                row.next_fire = now
            else:
                # The end of the current run would overwrite next_fire: leave a request instead.
                row.fire_requested_at = now
            row.updated_at = now
            self._notify()
            return row.public()

    # -- claiming ---------------------------------------------------------------------------------

    def claim_due(self, node_id: str, *, limit: int, buckets: Sequence[int] | None, ahead: float = 0.0) -> list[Claim]:
        limit = max(1, min(limit, self.batch_size))
        owned = None if buckets is None else set(buckets)
        with self._tx() as now:
            # Invariant 2: due by the clock of this very claim (plus the look-ahead window).
            due_by = now + timedelta(seconds=max(ahead, 0.0))
            due = [
                r
                for r in self._schedules.values()
                if r.claimable
                and r.next_fire is not None
                and r.next_fire <= due_by
                and (owned is None or r.spec.bucket in owned)
            ]
            due.sort(key=lambda r: (r.next_fire, r.id))
            claims = []
            for row in due[:limit]:
                assert row.next_fire is not None
                row.state, row.claimed_by, row.claimed_at = ScheduleState.RUNNING, node_id, now
                row.claim_seq += 1  # the fence token
                # Invariant 1: the fire's run row, unless it is already recorded (then no run id:
                # the engine advances the schedule without running the fire again).
                run_id = self._insert_run(
                    RunRow(
                        id=next(self._run_ids),
                        schedule_id=row.id,
                        scheduled_for=row.next_fire,
                        attempt=1,
                        claim_seq=row.claim_seq,
                        node=node_id,
                        status=RunStatus.RUNNING,
                        # A fire claimed ahead of its time has not started yet.
                        started_at=None if row.next_fire > now else now,
                    )
                )
                claims.append(Claim(row.id, row.spec, row.next_fire, row.claim_seq, now, run_id))
            return claims

    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool]:
        with self._tx() as now:
            return [self._finish_one(node_id, f, now) for f in finishes]

    def _finish_one(self, node_id: str, f: Finish, now: datetime) -> bool:
        run = self._runs.get(f.claim.run_id) if f.claim.run_id is not None else None
        row = self._held(f.claim)
        if row is None:
            if run is not None:
                # Fenced out: only the finisher's own run row notes it; a status the reaper or
                # a dead-node release gave it stays.
                if run.status is RunStatus.RUNNING:
                    run.status, run.finished_at = f.outcome.status, now
                detail = f": {f.outcome.error}" if f.outcome.error else ""
                run.error = cap(f"finished ({f.outcome.status.value}) after its claim was taken over{detail}")
            return False
        row.next_fire = now if row.fire_requested_at is not None else _aware(f.next_fire)
        row.fire_requested_at = None
        row.unhold()
        if run is not None:
            run.end(f.outcome.status, f.outcome.error, now)
            if f.started_at is not None:
                run.started_at = utc(f.started_at)
        for at, reason in f.skipped:
            self._insert_run(
                RunRow(
                    id=next(self._run_ids),
                    schedule_id=row.id,
                    scheduled_for=utc(at),
                    attempt=1,
                    claim_seq=f.claim.claim_seq,
                    node=node_id,
                    status=RunStatus.SKIPPED,
                    finished_at=f.finished_at or f.claim.claimed_at,
                    error=cap(reason),
                )
            )
        return True

    def unclaim(self, node_id: str, claims: Sequence[Claim]) -> int:
        with self._tx():
            given_back = 0
            for claim in claims:
                row = self._held(claim)
                if row is None:
                    continue
                row.unhold()  # next_fire unchanged: still due at the claimed time
                run = self._runs.get(claim.run_id) if claim.run_id is not None else None
                if run is not None and run.status is RunStatus.RUNNING:
                    self._delete_run(run.id)
                given_back += 1
            if given_back:
                self._notify()
            return given_back

    def end_attempt(self, claim: Claim, outcome: Outcome, started_at: datetime | None = None) -> None:
        with self._tx() as now:
            run = self._runs.get(claim.run_id) if claim.run_id is not None else None
            if run is not None and run.status is RunStatus.RUNNING:
                run.end(outcome.status, outcome.error, now)
                if started_at is not None:
                    run.started_at = utc(started_at)

    def start_attempt(self, node_id: str, claim: Claim) -> int | None:
        with self._tx() as now:
            row = self._schedules.get(claim.schedule_id)
            if row is None or row.claim_seq != claim.claim_seq:
                return None
            row.claimed_at = now  # a retry renews the claim
            if row.state is not ScheduleState.RUNNING:
                return None
            run = RunRow(
                id=next(self._run_ids),
                schedule_id=row.id,
                scheduled_for=claim.scheduled_for,
                attempt=claim.attempt,
                claim_seq=row.claim_seq,
                node=node_id,
                status=RunStatus.RUNNING,
                started_at=now,
            )
            return self._insert_run(run)

    def next_due(self, *, buckets: Sequence[int] | None) -> datetime | None:
        owned = None if buckets is None else set(buckets)
        with self._tx():
            times = [
                r.next_fire
                for r in self._schedules.values()
                if r.claimable and r.next_fire is not None and (owned is None or r.spec.bucket in owned)
            ]
            return min(times, default=None)

    def renew(self, node_id: str, claims: Sequence[Claim]) -> None:
        with self._tx() as now:
            for claim in claims:
                row = self._schedules.get(claim.schedule_id)
                if row is not None and row.claimed_by == node_id and row.state is ScheduleState.RUNNING:
                    row.claimed_at = now

    def release_node(self, node_id: str, reason: str) -> int:
        with self._tx() as now:
            for run in self._runs.values():
                if run.node == node_id and run.status is RunStatus.RUNNING:
                    run.end(RunStatus.ABANDONED, reason, now)
            held = [r for r in self._schedules.values() if r.claimed_by == node_id and r.state is ScheduleState.RUNNING]
            for row in held:
                row.unhold()
            if held:
                self._notify()
            return len(held)

    def reap_expired(self, grace_seconds: float) -> int:
        with self._tx() as now:
            expired = [
                r
                for r in self._schedules.values()
                if r.state is ScheduleState.RUNNING
                and r.claimed_at is not None
                and r.claimed_at + r.spec.timeout + timedelta(seconds=grace_seconds) < now
            ]
            for row in expired:
                row.unhold()
                for run in self._runs.values():
                    if run.schedule_id == row.id and run.claim_seq == row.claim_seq and run.status is RunStatus.RUNNING:
                        error = f"hard timeout: claim not ended within timeout + {grace_seconds:g}s grace"
                        run.end(RunStatus.TIMED_OUT, error, now)
            if expired:
                self._notify()
            return len(expired)

    # -- nodes ------------------------------------------------------------------------------------

    def heartbeat(self, node_id: str) -> datetime:
        with self._tx() as now:
            known = self._nodes.get(node_id)
            self._nodes[node_id] = NodeInfo(node_id, known.started_at if known else now, now)
            return now

    def nodes(self) -> list[NodeInfo]:
        with self._tx():
            return [self._nodes[k] for k in sorted(self._nodes)]

    def remove_node(self, node_id: str) -> None:
        with self._tx():
            self._nodes.pop(node_id, None)

    # -- history and notifications ----------------------------------------------------------------

    def history(self, *, limit: int = 50, schedule: str | None = None) -> list[RunRecord]:
        with self._tx():
            names = {r.id: r.spec.name for r in self._schedules.values()}
            newest = sorted(self._runs.values(), key=lambda r: r.id, reverse=True)
            chosen = [r for r in newest if schedule is None or names[r.schedule_id] == schedule]
            return [r.public(names[r.schedule_id]) for r in chosen[:limit]]

    def prune_history(self, older_than: timedelta) -> int:
        """Delete finished runs that finished more than ``older_than`` ago (store clock)."""
        with self._tx() as now:
            cutoff = now - older_than
            old = [
                r.id
                for r in self._runs.values()
                if r.status is not RunStatus.RUNNING and r.finished_at is not None and r.finished_at < cutoff
            ]
            for run_id in old:
                self._delete_run(run_id)
            return len(old)

    def listen(self, wake: Callable[[], None]) -> None:
        with self._lock:
            self._wakes.append(wake)

    def describe(self) -> str:
        return "memory store"

    def __repr__(self) -> str:
        return f"MemoryStore(schedules={len(self._schedules)}, runs={len(self._runs)})"
