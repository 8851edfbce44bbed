"""How a fire time of a zoned schedule is shown to people: in the schedule's zone first (that is
what its expression means), with UTC beside it (what the database and the logs hold)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from .durations import DurationError, seconds_in


def _clock(value: datetime) -> str:
    # Seconds only when there are some: "02:00" reads better than "02:00:00".
    return f"{value:%H:%M:%S}" if value.second or value.microsecond else f"{value:%H:%M}"


def local_time(value: datetime | None, timezone: str | None, *, named: bool = True) -> str:
    """``2026-11-27 02:00 Europe/Oslo (01:00Z)`` for a zoned time (the UTC date is added when
    it differs from the local one: ``(2026-11-26 23:30Z)``); ``2026-11-27 01:00Z`` for a schedule
    in UTC (or no zone), the same form without the zone; ``-`` for no time. For people: programs
    read ISO-8601 (``--json``). ``named=False`` leaves the zone's name out (``2026-11-27 02:00
    (01:00Z)``), for a table whose own column names the zone."""
    if value is None:
        return "-"
    utc = value.astimezone(UTC)
    if not timezone or timezone == "UTC":
        return f"{utc:%Y-%m-%d} {_clock(utc)}Z"
    local = utc.astimezone(ZoneInfo(timezone))
    beside = _clock(utc) if utc.date() == local.date() else f"{utc:%Y-%m-%d} {_clock(utc)}"
    zone = f" {timezone}" if named else ""
    return f"{local:%Y-%m-%d} {_clock(local)}{zone} ({beside}Z)"


def read_when(text: str) -> datetime | timedelta:
    """A time people type: an ISO-8601 time (naive when it has no offset: :func:`in_zone` reads it
    in the schedule's zone), or a duration such as ``90s``, ``2h``, ``3d`` (a timedelta).

    :raises ValueError: for anything else
    """
    try:
        span = seconds_in(text)
    except DurationError:
        pass
    else:
        if 0 <= span < timedelta.max.total_seconds():
            return timedelta(seconds=span)
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO-8601 time or a duration like 30m, 2h, 3d: {text!r}") from None


def in_zone(value: datetime | timedelta, timezone: str | None, now: datetime, *, ahead: bool = False) -> datetime:
    """What :func:`read_when` read, as an aware time: a naive time in ``timezone`` (the
    schedule's: ``2026-11-27T09:00`` means 09:00 where its expression is read), a duration
    before ``now`` (an age), or after it with ``ahead`` (``pause --until 2h``)."""
    if isinstance(value, timedelta):
        return now + value if ahead else now - value
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=ZoneInfo(timezone or "UTC"))
    return value
