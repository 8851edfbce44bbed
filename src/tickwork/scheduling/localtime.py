"""How a fire time of a zoned schedule is shown to people: in the schedule's zone first (that is
what its expression means), with UTC beside it (what the database and the logs hold)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo


def _clock(value: datetime) -> str:
    # Seconds only when there are some: "02:00" reads better than "02:00:00".
    return f"{value:%H:%M:%S}" if value.second or value.microsecond else f"{value:%H:%M}"


def local_time(value: datetime | None, timezone: str | None) -> str:
    """``2026-11-27 02:00 Europe/Oslo (01:00Z)`` for a zoned time (the UTC date is added when
    it differs from the local one: ``(2026-11-26 23:30Z)``); ``2026-11-27 01:00Z`` for a schedule
    in UTC (or no zone), the same form without the zone; ``-`` for no time. For people: programs
    read ISO-8601 (``--json``)."""
    if value is None:
        return "-"
    utc = value.astimezone(UTC)
    if not timezone or timezone == "UTC":
        return f"{utc:%Y-%m-%d} {_clock(utc)}Z"
    local = utc.astimezone(ZoneInfo(timezone))
    beside = _clock(utc) if utc.date() == local.date() else f"{utc:%Y-%m-%d} {_clock(utc)}"
    return f"{local:%Y-%m-%d} {_clock(local)} {timezone} ({beside}Z)"
