"""What the admin API (:mod:`tickwork.admin`) returns: read-only views of schedules and nodes.

Runs are returned as :class:`tickwork.structures.RunRecord`, the history row itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..scheduling.options import spec_json
from ..structures import (
    FaultKind,
    MisfirePolicy,
    Pause,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleSpec,
    ScheduleState,
    iso_z,
)
from .health import ScheduleHealth


@dataclass(frozen=True)
class ScheduleInfo:
    """One schedule as an operator sees it: its definition, its state and its last run.

    :param spec: the full definition (what :meth:`tickwork.admin.Admin.add` takes)
    :param next_fire: when it is next due (aware UTC); ``None`` when disabled or never again
    :param state: ``idle``, or ``running`` while a node holds it
    :param running_on: the node holding it, while ``running``
    :param last_run: the most recently recorded run (``None`` before the first one)
    :param fault: why the schedule is parked (a node could not handle it; it fires no more until
        its definition changes or it is enabled again), ``None`` when it is not
    :param fault_kind: what kind of fault that is (test it rather than the words of ``fault``:
        :attr:`FaultKind.EXECUTOR_NOT_CONFIGURED` says which ``[executor.NAME]`` table is missing)
    :param health: its health state and the reason (:mod:`tickwork.admin.health`); ``None`` where
        it was not computed
    :param pause: why it is paused (``tickwork jobs pause``, ``pause_after_failures``), by whom,
        since and until when; ``None`` when it is not paused
    :param failures: its consecutive failed fires (counted only with ``pause_after_failures``)
    """

    spec: ScheduleSpec
    next_fire: datetime | None
    state: ScheduleState
    running_on: str | None
    claimed_at: datetime | None
    last_run: RunRecord | None
    created_at: datetime
    updated_at: datetime
    fault: str | None = None
    fault_kind: FaultKind | None = None
    health: ScheduleHealth | None = None
    pause: Pause | None = None
    failures: int = 0
    #: The fires it ran (counted only with ``max_runs``); ``finished``: it ran them all.
    run_count: int = 0
    finished: bool = False
    #: The number of its current definition (:meth:`tickwork.Admin.versions`); 0: unchanged
    #: since before versions were recorded.
    version: int = 0
    #: The version the last ``tickwork apply`` left it at (``None``: never applied); see :attr:`drift`.
    applied_version: int | None = None

    @classmethod
    def of(cls, schedule: Schedule, last_run: RunRecord | None, health: ScheduleHealth | None = None) -> ScheduleInfo:
        running = schedule.state is ScheduleState.RUNNING
        return cls(
            spec=schedule.spec,
            next_fire=schedule.next_fire,
            state=schedule.state,
            running_on=schedule.claimed_by if running else None,
            claimed_at=schedule.claimed_at if running else None,
            last_run=last_run,
            created_at=schedule.created_at,
            updated_at=schedule.updated_at,
            fault=schedule.fault,
            fault_kind=schedule.fault_kind,
            health=health,
            pause=schedule.pause if not schedule.spec.enabled else None,
            failures=schedule.failures,
            run_count=schedule.run_count,
            finished=schedule.finished,
            version=schedule.version,
            applied_version=schedule.applied_version,
        )

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def drift(self) -> bool:
        """Changed since the last apply by something else: its version moved past the applied
        one (docs/schedules-in-git.md#drift); the versions after it say who, when and what."""
        return self.applied_version is not None and self.version > self.applied_version

    @property
    def enabled(self) -> bool:
        return self.spec.enabled

    @property
    def kind(self) -> str:
        """The trigger kind (``cron``, ``calendar``, ``interval``, ``once``, ...)."""
        return self.spec.trigger_kind

    @property
    def expression(self) -> str:
        return self.spec.expression

    @property
    def timezone(self) -> str:
        return self.spec.timezone

    @property
    def executor(self) -> str:
        return self.spec.executor

    @property
    def target(self) -> str:
        return self.spec.target

    @property
    def arguments(self) -> dict[str, Any]:
        return dict(self.spec.arguments)

    @property
    def timeout(self) -> float:
        """Soft timeout of a run, in seconds."""
        return self.spec.timeout.total_seconds()

    @property
    def retries(self) -> int:
        return self.spec.retries

    @property
    def retry_backoff(self) -> float:
        return self.spec.retry_backoff.total_seconds()

    @property
    def misfire(self) -> MisfirePolicy | None:
        """The schedule's own misfire policy; ``None`` follows ``[scheduler] misfire``."""
        return self.spec.misfire

    @property
    def module(self) -> str | None:
        """The module that declares it in code; ``None`` for a run-time schedule."""
        return self.spec.module

    @property
    def last_status(self) -> RunStatus | None:
        return None if self.last_run is None else self.last_run.status

    @property
    def last_run_at(self) -> datetime | None:
        """The scheduled time of the last run."""
        return None if self.last_run is None else self.last_run.scheduled_for

    def as_json(self) -> dict[str, Any]:
        """The JSON object ``tickwork jobs list --json`` and ``jobs show --json`` print."""
        return {
            "name": self.name,
            "namespace": self.spec.namespace,
            "kind": self.kind,
            "expression": self.expression,
            "timezone": self.timezone,
            "executor": self.executor,
            "target": self.target,
            "arguments": self.arguments,
            "enabled": self.enabled,
            "next_fire": iso_z(self.next_fire),
            "state": self.state.value,
            "claimed_by": self.running_on,
            "module": self.module,
            "timeout": self.timeout,
            "retries": self.retries,
            "retry_backoff": self.retry_backoff,
            "misfire": None if self.misfire is None else self.misfire.value,
            "last_status": None if self.last_status is None else self.last_status.value,
            "last_run_at": iso_z(self.last_run_at),
            "fault": self.fault,
            "fault_kind": None if self.fault_kind is None else self.fault_kind.value,
            "health": None if self.health is None else self.health.as_json(),
            "pause": None if self.pause is None else pause_json(self.pause),
            "failures": self.failures,
            "run_count": self.run_count,
            "finished": self.finished,
            "version": self.version,
            "applied_version": self.applied_version,
            "drift": self.drift,
            # The rarer options, every one (``null``: unset), each written by its own codec.
            **spec_json(self.spec),
        }


def pause_json(pause: Pause) -> dict[str, Any]:
    return {"note": pause.note, "by": pause.by, "at": iso_z(pause.at), "until": iso_z(pause.until)}


@dataclass(frozen=True)
class NodeInfo:
    """A node record with its liveness, judged by the database clock.

    :param heartbeat_age: seconds since the node's last heartbeat
    :param live: whether that age is within the membership's ``node_ttl`` (a node that exited
        without leaving keeps its record until a live node finds it dead and removes it)
    :param executors: what the node runs (``None``: not published)
    """

    id: str
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age: float
    live: bool
    #: The executor names the node has configured, sorted; ``None`` when it does not publish
    #: them (a node of an older tickwork).
    executors: tuple[str, ...] | None = None

    @property
    def age(self) -> timedelta:
        return timedelta(seconds=self.heartbeat_age)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "started_at": iso_z(self.started_at),
            "heartbeat_at": iso_z(self.heartbeat_at),
            "heartbeat_age": round(self.heartbeat_age, 3),
            "live": self.live,
            "executors": None if self.executors is None else list(self.executors),
        }
