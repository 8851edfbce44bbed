"""``MemoryStore``: a complete :class:`~tickwork.abc.Store` in one process's memory.

It is the executable specification of docs/claim-protocol.md: every rule a SQL store keeps with
constraints and fenced statements is written here as plain Python under one lock, so a reader
can check a database store against it line by line, and users can test their jobs without a
database (``SchedulerHarness`` uses it by default). This module holds the protocol (claims,
ends, retries); memory_releases.py what a node leaves behind given back (its release, a dead
node's, claims past their hard timeout); memory_starts.py the fenced starts and takeovers;
memory_reruns.py the reruns of abandoned fires; memory_concurrency.py admissions under
concurrency limits; memory_tables.py the rest (schedules, nodes, history).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from ..abc import CLAIM_GROWTH, NextDueSink, Store
from ..config.declarations import Choice
from ..config.tables import StoreSettings
from ..structures import (
    Claim,
    Fault,
    Finish,
    NodeRecord,
    Outcome,
    RunStatus,
    ScheduleState,
    cap_error,
    utc,
)
from .memory_backfill import MemoryBackfills
from .memory_concurrency import MemoryConcurrency
from .memory_counts import MemoryCounts
from .memory_handoffs import MemoryHandoffs
from .memory_releases import MemoryReleases
from .memory_reruns import MemoryReruns
from .memory_rows import RunRow, ScheduleRow
from .memory_starts import unstarted
from .memory_tables import MemoryTables, aware
from .memory_tokens import MemoryTokens


def fair_order(due: Sequence[ScheduleRow], limit: int) -> list[ScheduleRow]:
    """Up to ``limit`` of the ``due`` rows as the SQL store's fair claim takes them
    (docs/teams.md#fair-firing): each namespace's earliest first, the namespaces taking turns."""
    by_namespace: dict[str, list[ScheduleRow]] = {}
    for row in sorted(due, key=lambda r: (r.next_fire, r.id)):
        by_namespace.setdefault(row.spec.namespace, []).append(row)
    queues = [by_namespace[n] for n in sorted(by_namespace)]
    out: list[ScheduleRow] = []
    depth = 0
    while len(out) < limit and any(depth < len(q) for q in queues):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out[:limit]


class MemorySettings(StoreSettings):
    """The memory store's options."""

    claim = Choice(("lock",), "lock", help="The claim strategy: one lock makes every claim atomic.")


class MemoryStore(
    MemoryConcurrency,
    MemoryReleases,
    MemoryHandoffs,
    MemoryCounts,
    MemoryBackfills,
    MemoryReruns,
    MemoryTables,
    MemoryTokens,
    Store,
):
    """Schedules, claims and history in memory; thread-safe, gone when the process ends.

    :param clock: the "database clock" (e.g. a :class:`~tickwork.testing.FakeClock`); default:
        the system clock in UTC
    :param options: the keys of :class:`MemorySettings` (``claim``, ``batch_size``)
    """

    section = MemorySettings
    claim_strategies = MemorySettings.claim.options

    def __init__(self, *, clock: Callable[[], datetime] | None = None, **options: Any) -> None:
        self.settings = MemorySettings(**options)
        self.batch_size = self.settings.batch_size
        self._init_tables(clock)
        self._init_backfills()
        self._init_concurrency()
        self._init_tokens()

    # -- claiming ---------------------------------------------------------------------------------

    claim_reads_next_due: ClassVar[bool] = True

    @property
    def claim_ceiling(self) -> int:
        return CLAIM_GROWTH * self.batch_size

    def claim_due(
        self,
        node_id: str,
        *,
        limit: int,
        buckets: Sequence[int] | None,
        ahead: float = 0.0,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
        next_due: NextDueSink | None = None,
    ) -> list[Claim]:
        limit = max(1, min(limit, self.claim_ceiling))
        owned = None if buckets is None else set(buckets)
        served = None if namespaces is None else set(namespaces)
        with self._tx() as now:
            # Invariant 2: due by the clock of this very claim (plus the look-ahead window).
            due_by = now + timedelta(seconds=max(ahead, 0.0))
            # Any bucket's fire overdue by more than steal_after (its owners are behind).
            stolen_by = None if steal_after is None else now - timedelta(seconds=steal_after)
            due = [
                r
                for r in self._schedules.values()
                if r.claimable
                and r.next_fire is not None
                and r.next_fire <= due_by
                and (served is None or r.spec.namespace in served)
                and (owned is None or r.spec.bucket in owned or (stolen_by is not None and r.next_fire <= stolen_by))
            ]
            claims = []
            for row in fair_order(due, limit):
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
                claims.append(Claim(row.id, row.spec, row.next_fire, row.claim_seq, now, run_id, version=row.version))
            if next_due is not None and 0 < len(claims) < limit:
                # As the SQL stores without UPDATE ... RETURNING do: read in the claim's transaction.
                next_due(self.next_due(buckets=buckets, steal_after=steal_after, namespaces=namespaces))
            return claims

    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool | None]:
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
                run.error = cap_error(f"finished ({f.outcome.status.value}) after its claim was taken over{detail}")
            return False
        next_fire = row.released_next_fire(aware(f.next_fire), now)
        row.fire_requested_at = None
        row.unhold()
        row.next_fire = next_fire
        if run is not None:
            run.end(f.outcome.status, f.outcome.error, utc(f.finished_at) if f.finished_at is not None else now)
            if f.started_at is not None:
                run.started_at = utc(f.started_at)
        self._count_failure(row, f, now)
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
                    error=cap_error(reason),
                    version=f.claim.version,
                )
            )
        if self._count_run(row, f):
            self._remove_finished(row)  # last: its history goes with it
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
            for known in self._runs.values():  # opened before under this claim: the same attempt
                if (known.schedule_id, known.scheduled_for, known.attempt, known.claim_seq, known.node) == (
                    row.id,
                    claim.scheduled_for,
                    claim.attempt,
                    row.claim_seq,
                    node_id,
                ) and known.status is RunStatus.RUNNING:
                    return known.id
            run = RunRow(
                id=next(self._run_ids),
                schedule_id=row.id,
                scheduled_for=claim.scheduled_for,
                attempt=claim.attempt,
                claim_seq=row.claim_seq,
                node=node_id,
                status=RunStatus.RUNNING,
                started_at=now,
                version=claim.version,
            )
            return self._insert_run(run)

    def next_due(
        self,
        *,
        buckets: Sequence[int] | None,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> datetime | None:
        owned = None if buckets is None else set(buckets)
        served = None if namespaces is None else set(namespaces)
        # Another bucket's fire is claimable once overdue by steal_after (claim_due).
        late = None if steal_after is None else timedelta(seconds=steal_after)
        with self._tx() as now:
            times = []
            for r in self._schedules.values():
                if not r.claimable or r.next_fire is None or (served is not None and r.spec.namespace not in served):
                    continue
                if owned is None or r.spec.bucket in owned:
                    times.append(r.next_fire)
                elif late is not None and r.next_fire <= now:  # already due, its owners behind
                    times.append(r.next_fire + late)
            return min(times, default=None)

    def renew(self, node_id: str, claims: Sequence[Claim]) -> None:
        with self._tx() as now:
            for claim in claims:
                row = self._schedules.get(claim.schedule_id)
                # A fire claimed ahead and not started stays so (see start_held).
                if (
                    row is not None
                    and row.claimed_by == node_id
                    and row.state is ScheduleState.RUNNING
                    and not unstarted(row)
                ):
                    # Never before the fire time: a start recorded ahead stays started.
                    row.claimed_at = max(now, row.next_fire) if row.next_fire is not None else now

    def park(self, node_id: str, parks: Sequence[tuple[Finish, Fault]]) -> list[bool | None]:
        with self._tx() as now:
            landed: list[bool | None] = []
            for f, fault in parks:
                row = self._held(f.claim)
                landed.append(row is not None)
                if row is None:
                    continue
                row.unhold()
                row.next_fire, row.fire_requested_at = None, None
                row.fault, row.fault_kind = fault.text, fault.kind
                run = self._runs.get(f.claim.run_id) if f.claim.run_id is not None else None
                if run is not None:
                    run.end(f.outcome.status, f.outcome.error, now)
            if any(landed):
                self._notify()
            return landed

    def register_node(self, node_id: str, instance: str, live_within: float) -> NodeRecord | None:
        with self._tx() as now:
            known = self._nodes.get(node_id)
            owner = self._instances.get(node_id)
            if known is not None and owner != instance and known.heartbeat_at > now - timedelta(seconds=live_within):
                return known
            self._nodes[node_id] = NodeRecord(node_id, now, now, self._announced.get(node_id))
            self._instances[node_id] = instance
            return None
