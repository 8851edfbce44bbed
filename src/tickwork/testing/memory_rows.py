"""The rows a :class:`~tickwork.testing.MemoryStore` keeps: the in-memory twins of the
``tickwork_schedules`` and ``tickwork_runs`` tables (``tickwork.sql.schema``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..structures import FaultKind, Pause, RunRecord, RunStatus, Schedule, ScheduleSpec, ScheduleState, cap_error


def stored_spec(spec: ScheduleSpec) -> ScheduleSpec:
    """The spec as a database would give it back: arguments through JSON (a tuple comes back a
    list; something JSON cannot hold is refused, as a SQL store refuses it)."""
    try:
        arguments: dict[str, Any] = json.loads(json.dumps(spec.arguments))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"arguments: must be JSON-serialisable: {exc}") from exc
    return replace(spec, arguments=arguments)


@dataclass
class ScheduleRow:
    id: int
    spec: ScheduleSpec
    next_fire: datetime | None
    created_at: datetime
    updated_at: datetime
    state: ScheduleState = ScheduleState.IDLE
    claimed_by: str | None = None
    claimed_at: datetime | None = None
    claim_seq: int = 0
    #: A "run now" that arrived while a run was active; the release honours it.
    fire_requested_at: datetime | None = None
    #: Why the schedule is parked (see :meth:`tickwork.abc.Store.park`).
    fault: str | None = None
    fault_kind: FaultKind | None = None
    #: A write chose the next fire while a claim held the row (:meth:`choose_next_fire`): the
    #: claim's release makes ``retimed_next`` the next fire; ``next_fire`` stays the held fire's.
    retimed: bool = False
    retimed_next: datetime | None = None
    #: Why it is paused (disabled with a note), and its consecutive failures.
    pause: Pause | None = None
    failures: int = 0
    run_count: int = 0
    #: The number of its current definition (``tickwork_schedules.version``).
    version: int = 0
    #: The version the last apply left it at (``tickwork_schedules.applied_version``).
    applied_version: int | None = None

    def resumed(self) -> None:
        """Enabled: no longer paused, its failures counted afresh."""
        self.pause = None
        self.failures = 0

    @property
    def claimable(self) -> bool:
        return self.spec.enabled and self.state is ScheduleState.IDLE and self.next_fire is not None

    def choose_next_fire(self, value: datetime | None) -> None:
        """A write's next fire (``tickwork.sql.rows.next_fire_values``): on a held row it waits
        for the claim's release, so the held fire's time, which the fence compares the claim
        with, never changes under a run in flight."""
        if self.state is ScheduleState.RUNNING:
            self.retimed, self.retimed_next = True, value
        else:
            self.next_fire, self.retimed, self.retimed_next = value, False, None

    def released_next_fire(self, run_next: datetime | None, now: datetime) -> datetime | None:
        """The next fire a release of the claim leaves: a pending "run now", else a next fire a
        write chose meanwhile, else the run's own."""
        if self.fire_requested_at is not None:
            return now
        return self.retimed_next if self.retimed else run_next

    def unhold(self) -> None:
        """Held by no node; the next fire a write chose meanwhile applies."""
        if self.retimed:
            self.next_fire = self.retimed_next
        self.state = ScheduleState.IDLE
        self.claimed_by = None
        self.claimed_at = None
        self.retimed = False
        self.retimed_next = None

    def public(self) -> Schedule:
        return Schedule(
            id=self.id,
            spec=self.spec,
            next_fire=self.retimed_next if self.retimed else self.next_fire,
            state=self.state,
            claimed_by=self.claimed_by,
            claimed_at=self.claimed_at,
            claim_seq=self.claim_seq,
            created_at=self.created_at,
            updated_at=self.updated_at,
            fault=self.fault,
            fault_kind=self.fault_kind,
            pause=self.pause,
            failures=self.failures,
            run_count=self.run_count,
            version=self.version,
            applied_version=self.applied_version,
        )


@dataclass
class RunRow:
    id: int
    schedule_id: int
    scheduled_for: datetime
    attempt: int
    claim_seq: int | None
    node: str | None
    status: RunStatus
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    #: The queue worker that reported a hand-off started (``tickwork_runs.worker``).
    worker: str | None = None
    #: The schedule's version it fired under (set from the claim, else from the schedule row).
    version: int | None = None

    @property
    def fire(self) -> tuple[int, datetime, int]:
        """The unique key of invariant 1: (schedule, scheduled-for, attempt)."""
        return (self.schedule_id, self.scheduled_for, self.attempt)

    def end(self, status: RunStatus, error: str | None, at: datetime) -> None:
        self.status = status
        self.error = cap_error(error)
        self.finished_at = at

    def public(self, schedule: str, namespace: str) -> RunRecord:
        return RunRecord(
            id=self.id,
            schedule=schedule,
            namespace=namespace,
            scheduled_for=self.scheduled_for,
            started_at=self.started_at,
            finished_at=self.finished_at,
            node=self.node,
            status=self.status,
            error=self.error,
            attempt=self.attempt,
            worker=self.worker,
            version=self.version,
        )
