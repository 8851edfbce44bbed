"""A fire's identity at the broker boundary: the message id and the headers every message carries.

The id is a UUID 5 of (schedule, scheduled time, attempt): a publish retried for the same attempt
gets the same id, and a broker or worker that deduplicates by id sees one message per attempt.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tickwork.plugin.runcontext import RunContext
from tickwork.structures import JobCall, iso_z

#: Namespace of the message ids (a fixed, random UUID: ids never collide with other uuid5 users).
NAMESPACE = uuid.UUID("4f3c2a8e-6b1d-5e7f-9a0c-2d4b6e8f1a3c")

SCHEDULE = "tickwork_schedule"
SCHEDULED_FOR = "tickwork_scheduled_for"
ATTEMPT = "tickwork_attempt"
RUN_ID = "tickwork_run_id"
NODE = "tickwork_node"


def message_id(schedule: str, scheduled_for: datetime, attempt: int) -> str:
    """The id of the message of attempt ``attempt`` of the fire of ``schedule`` at ``scheduled_for``."""
    return str(uuid.uuid5(NAMESPACE, f"{schedule}\x00{iso_z(scheduled_for)}\x00{attempt}"))


def message_id_of(call: JobCall) -> str:
    return message_id(call.schedule, call.scheduled_for, call.attempt)


def headers(call: JobCall) -> dict[str, str]:
    """The headers of ``call``'s message: schedule name, scheduled time (ISO, UTC), attempt, run id
    and the node that handed it off; all strings, which every broker carries unchanged."""
    return {
        SCHEDULE: call.schedule,
        SCHEDULED_FOR: iso_z(call.scheduled_for),
        ATTEMPT: str(call.attempt),
        RUN_ID: str(call.run_id),
        NODE: call.node_id,
    }


def context_of(values: Mapping[str, Any] | None) -> RunContext | None:
    """The run context the headers :func:`headers` wrote name; ``None`` when ``values`` holds none
    (a message not sent by tickwork) or they are malformed."""
    if not values or RUN_ID not in values:
        return None
    try:
        return RunContext(
            schedule=str(values[SCHEDULE]),
            scheduled_for=datetime.fromisoformat(str(values[SCHEDULED_FOR]).replace("Z", "+00:00")),
            run_id=int(values[RUN_ID]),
            attempt=int(values[ATTEMPT]),
            node_id=str(values.get(NODE, "")),
        )
    except (KeyError, TypeError, ValueError):
        return None
