"""Rows to structures and back: schedule and run rows as the public dataclasses, a spec as the
column values it is stored with."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Row, case, false, literal, true

from ..scheduling.options import stored_fields, stored_json
from ..structures import (
    FaultKind,
    MisfirePolicy,
    Pause,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleSpec,
    ScheduleState,
)
from .schema import UTCDateTime, schedules

#: A claim holds the row: its ``next_fire`` is the held fire's time, which the fenced start, the
#: takeover and the renewal compare ``claimed_at`` with (docs/claim-protocol.md).
HELD = schedules.c.state == "running"

#: The SET clause that leaves a schedule held by no node: its next fire time unchanged, or the
#: one a write chose while the claim held it (:func:`next_fire_values`). MySQL assigns SET left to
#: right and SQLAlchemy orders it by the table's columns: ``next_fire`` comes before ``retimed``
#: and ``retimed_next``, so it reads their values from before this statement.
UNHELD: dict[str, Any] = {
    "state": "idle",
    "claimed_by": None,
    "claimed_at": None,
    "next_fire": case((schedules.c.retimed, schedules.c.retimed_next), else_=schedules.c.next_fire),
    "retimed": False,
    "retimed_next": None,
}


def next_fire_values(next_fire: Any) -> dict[str, Any]:
    """The SET clause of a write that chooses a schedule's next fire (``jobs update``, enable,
    disable, pause, resume, a sync, a pause by failures): on an idle row, ``next_fire`` itself;
    on a row a claim holds, it is kept for the claim's release (``retimed_next``) and the row's
    ``next_fire``, the held fire's time, is left alone. Writing it there made a started run look
    claimed ahead and never started: the takeover gave the fire back, deleted its run row, and
    the next fire ran beside the first (issue #40). No column it reads is assigned here."""
    if not isinstance(next_fire, ColumnElement):
        # Bound as the column's type: a bare datetime in a CASE would be bound as a plain
        # DateTime (SQLite: text where the column stores microseconds).
        next_fire = literal(next_fire, UTCDateTime)
    return {
        "next_fire": case((HELD, schedules.c.next_fire), else_=next_fire),
        "retimed": case((HELD, true()), else_=false()),
        "retimed_next": case((HELD, next_fire), else_=None),
    }


def _arguments(stored: Any) -> dict[str, Any]:
    # JSON text from a claim (CLAIMED_COLUMNS), already decoded elsewhere. Most schedules have
    # none: "{}" skips the decoder, whose call costs more than the empty object.
    if isinstance(stored, str | bytes):
        if stored in ("{}", b"{}"):
            return {}
        stored = json.loads(stored)
    return dict(stored or {})


@functools.lru_cache(maxsize=1024)
def _seconds(value: float) -> timedelta:
    """A stored number of seconds as a timedelta (immutable, so shared: a fleet's schedules
    repeat a few timeouts and backoffs)."""
    return timedelta(seconds=value)


def _options(stored: Any) -> dict[str, Any] | None:
    """The spec fields of a stored ``options`` value (JSON text from a claim, or decoded), each
    read by its option's codec (:func:`tickwork.scheduling.options.stored_fields`); ``None`` for
    none (NULL)."""
    if isinstance(stored, str | bytes):
        stored = json.loads(stored)
    return None if stored is None else stored_fields(stored)


def spec_from_row(r: Mapping[Any, Any]) -> ScheduleSpec:
    """The spec of a schedule row (by key: a Row's attribute access costs 5x more, and this runs
    for every claimed row not seen before). A row without options (NULL: most) gives a spec
    whose options are the class defaults (:meth:`ScheduleSpec.stored`)."""
    fields = {
        "name": r["name"],
        "trigger_kind": r["trigger_kind"],
        "expression": r["expression"],
        "timezone": r["timezone"],
        "executor": r["executor"],
        "target": r["target"],
        "arguments": _arguments(r["arguments"]),
        "timeout": _seconds(r["timeout_s"]),
        "module": r["module"],
        "enabled": bool(r["enabled"]),
        "misfire": MisfirePolicy(r["misfire"]) if r["misfire"] else None,
        "retries": r["retries"],
        "retry_backoff": _seconds(r["retry_backoff_s"]),
        "namespace": r["namespace"],
    }
    options = _options(r["options"])
    if options is not None:
        fields.update(options)
    return ScheduleSpec.stored(fields)


def schedule_from_row(row: Row[Any]) -> Schedule:
    # By key, as spec_from_row: a sync reads every stored schedule at each node start.
    r = row._mapping
    paused_note = r["paused_note"]
    fault_kind = r["fault_kind"]
    return Schedule(
        id=r["id"],
        spec=spec_from_row(r),
        # A next fire chosen while a claim held the row is what comes next after that run.
        next_fire=r["retimed_next"] if r["retimed"] else r["next_fire"],
        state=ScheduleState(r["state"]),
        claimed_by=r["claimed_by"],
        claimed_at=r["claimed_at"],
        claim_seq=r["claim_seq"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        fault=r["fault"],
        fault_kind=None if fault_kind is None else FaultKind(fault_kind),
        pause=None
        if paused_note is None
        else Pause(paused_note, by=r["paused_by"], at=r["paused_at"], until=r["paused_until"]),
        failures=r["failures"],
        run_count=r["run_count"],
        version=r["version"],
        applied_version=r["applied_version"],
    )


def run_record(r: Row[Any]) -> RunRecord:
    """A run row joined with its schedule's name and namespace (``schedule_name``, ``schedule_namespace``)."""
    return RunRecord(
        id=r.id,
        schedule=r.schedule_name,
        scheduled_for=r.scheduled_for,
        started_at=r.started_at,
        finished_at=r.finished_at,
        node=r.node,
        status=RunStatus(r.status),
        error=r.error,
        attempt=r.attempt,
        worker=r.worker,
        version=r.version,
        namespace=r.schedule_namespace,
    )


def spec_values(spec: ScheduleSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "namespace": spec.namespace,
        "module": spec.module,
        "bucket": spec.bucket,
        "trigger_kind": spec.trigger_kind,
        "expression": spec.expression,
        "timezone": spec.timezone,
        "executor": spec.executor,
        "target": spec.target,
        "arguments": spec.arguments,
        "timeout_s": spec.timeout.total_seconds(),
        "misfire": spec.misfire.value if spec.misfire else None,
        "retries": spec.retries,
        "retry_backoff_s": spec.retry_backoff.total_seconds(),
        "enabled": spec.enabled,
        "options": stored_json(spec),
    }


def utcnow() -> datetime:
    return datetime.now(UTC)
