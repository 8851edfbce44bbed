"""Times as an operator reads them: UTC, in a schedule's own zone, and relative to the
database's now ("in 3 min", "2 h ago")."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def utc_text(value: datetime | None) -> str:
    """``2026-11-24 06:30:00Z``; ``-`` for no value."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@lru_cache(maxsize=512)
def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def is_utc(zone: str | None) -> bool:
    """Whether times in ``zone`` read the same as in UTC all year (no second column needed)."""
    return zone is None or zone.upper() in ("UTC", "ETC/UTC", "Z", "GMT", "ETC/GMT", "UCT", "ETC/UCT", "ZULU")


def zone_text(value: datetime | None, zone: str) -> str:
    """``2026-11-24 07:30:00 CET`` in ``zone`` (its abbreviation, or the UTC offset where the
    zone has none, such as ``+03``); ``-`` for no value; UTC text for an unknown zone."""
    if value is None:
        return "-"
    tz = _zone(zone)
    if tz is None:
        return utc_text(value)
    local = value.astimezone(tz)
    name = local.tzname() or ""
    if not name or name[0] in "+-":
        offset = local.strftime("%z")
        name = f"UTC{offset[:3]}:{offset[3:]}"
    return f"{local:%Y-%m-%d %H:%M:%S} {name}"


def span(seconds: float) -> str:
    """A length of time in its largest sensible unit: ``45 s``, ``3 min``, ``2 h``, ``5 d``."""
    seconds = abs(seconds)
    if seconds < 1:
        return "now"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} d"


def relative(value: datetime | None, now: datetime) -> str:
    """``in 3 min`` for the future, ``2 h ago`` for the past, ``now`` within a second."""
    if value is None:
        return ""
    delta = (value - now).total_seconds()
    text = span(delta)
    if text == "now":
        return text
    return f"in {text}" if delta > 0 else f"{text} ago"


def duration(started: datetime | None, finished: datetime | None, now: datetime) -> str:
    """How long a run took (or has taken so far, while running); ``-`` if it never started."""
    if started is None:
        return "-"
    seconds = ((finished or now) - started).total_seconds()
    if seconds < 10:
        return f"{max(seconds, 0):.2f} s"
    return span(seconds)
