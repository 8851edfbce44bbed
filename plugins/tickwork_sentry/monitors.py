"""From a schedule to its Sentry monitor: the slug, the monitor config, the check-in id."""

from __future__ import annotations

import math
import re
import uuid
from datetime import datetime
from typing import Any

from tickwork.scheduling.durations import DurationError, seconds_in
from tickwork.structures import DEFAULT_NAMESPACE, ScheduleSpec

#: Sentry's longest monitor slug.
MAX_SLUG = 50
_UNSAFE = re.compile(r"[^a-z0-9_-]+")
#: The check-in ids of one fire are the same on every node (a uuid5 of the fire's identity).
_NAMESPACE = uuid.UUID("6f1d2a4e-8c1b-4f7e-9a51-3c0de2b7a9f4")
_UNITS = (("day", 86_400), ("hour", 3600), ("minute", 60))


def monitored_name(name: str, namespace: str) -> str:
    """What a schedule's monitor is named after: its name, after its namespace unless that is
    ``default`` (so that one team's monitors keep the slugs they had; docs/teams.md)."""
    return name if namespace == DEFAULT_NAMESPACE else f"{namespace}.{name}"


def monitored(spec: ScheduleSpec) -> str:
    """:func:`monitored_name` of ``spec``."""
    return monitored_name(spec.name, spec.namespace)


def slug(name: str, prefix: str = "") -> str:
    """The monitor slug of a schedule: lower case, runs of other characters as one ``-``, cut to
    50 characters. Two names that differ only in what this drops share a monitor."""
    text = _UNSAFE.sub("-", (prefix + name).lower()).strip("-")
    return text[:MAX_SLUG].rstrip("-") or "tickwork"


def check_in_id(schedule: str, scheduled_for: datetime, attempt: int) -> str:
    """One id per attempt of a fire, whichever node starts or ends it."""
    return uuid.uuid5(_NAMESPACE, f"{schedule}|{scheduled_for.isoformat()}|{attempt}").hex


def schedule_of(spec: ScheduleSpec) -> dict[str, Any] | None:
    """Sentry's ``schedule`` for this trigger: a five-field crontab as it is, an interval in whole
    minutes (rounded up: Sentry's smallest unit), ``None`` for what Sentry cannot express (a
    six-field cron with seconds, a calendar, a one-off)."""
    if spec.trigger_kind == "cron" and len(spec.expression.split()) == 5:
        return {"type": "crontab", "value": spec.expression}
    if spec.trigger_kind == "interval":
        try:
            seconds = seconds_in(spec.expression)
        except DurationError:
            return None
        for unit, size in _UNITS:
            if seconds >= size and seconds % size == 0:
                return {"type": "interval", "value": int(seconds // size), "unit": unit}
        return {"type": "interval", "value": max(1, math.ceil(seconds / 60)), "unit": "minute"}
    return None


def monitor_config(spec: ScheduleSpec, checkin_margin: int) -> dict[str, Any] | None:
    """The monitor config sent with every check-in (Sentry creates or updates the monitor from
    it): schedule, time zone, check-in margin and the run's timeout as the maximum runtime."""
    schedule = schedule_of(spec)
    if schedule is None:
        return None
    return {
        "schedule": schedule,
        "timezone": spec.timezone,
        "checkin_margin": checkin_margin,
        "max_runtime": max(1, math.ceil(spec.timeout.total_seconds() / 60)),
    }
