"""Times as an operator reads them: UTC, and relative to the database's now ("in 3 min", "2 h ago")."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_text(value: datetime | None) -> str:
    """``2026-11-24 06:30:00Z``; ``-`` for no value."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


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
