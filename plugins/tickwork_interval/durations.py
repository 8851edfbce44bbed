"""Parsing and formatting the duration syntax of the ``interval`` trigger (``90s``, ``1h30m``, ``2d``)."""

from __future__ import annotations

import re
from datetime import timedelta

from tickwork.errors import TriggerError

#: Unit letters, largest first, with their length in seconds.
UNITS: dict[str, int] = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}

_PART = re.compile(r"(\d+)\s*([a-zA-Z]+)\s*")

#: A cheap test of the syntax, used by ``recognizes``.
DURATION_PATTERN = r"(?:\d+\s*[wdhmsWDHMS]\s*)+"


def parse_duration(text: str) -> timedelta:
    """Parse ``<n><unit>`` parts, units ``w d h m s`` each at most once and largest first.

    :raises TriggerError: naming the offending part (unknown unit, out of order, zero total, ...)
    """
    stripped = text.strip()
    if not stripped:
        raise TriggerError("interval: the duration is empty; expected something like '90s', '5m' or '1h30m'")
    seconds = 0
    position = 0
    previous_rank = -1
    ranks = list(UNITS)
    while position < len(stripped):
        match = _PART.match(stripped, position)
        if match is None:
            raise TriggerError(
                f"interval: cannot parse {stripped[position:]!r} in {text.strip()!r}; "
                "expected parts like '90s', '5m', '1h30m' (units w, d, h, m, s)"
            )
        if len(match[1]) > 15:  # beyond any timedelta; int() itself refuses 4,300+ digits
            raise TriggerError(f"interval: the number in {match[0].strip()[:40]!r} is too long")
        number, unit = int(match[1]), match[2].lower()
        if unit not in UNITS:
            raise TriggerError(f"interval: unknown unit {match[2]!r} in {match[0].strip()!r} (use w, d, h, m or s)")
        rank = ranks.index(unit)
        if rank <= previous_rank:
            raise TriggerError(
                f"interval: unit {unit!r} in {text.strip()!r} repeats or comes after a smaller unit; write e.g. '1h30m'"
            )
        previous_rank = rank
        seconds += number * UNITS[unit]
        position = match.end()
    if seconds <= 0:
        raise TriggerError(f"interval: the duration {text.strip()!r} must be positive")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise TriggerError(f"interval: the duration {text.strip()!r} is too long") from None


def format_duration(duration: timedelta) -> str:
    """The canonical text of a whole-second duration, largest units first (``5400s`` -> ``1h30m``)."""
    remaining = int(duration.total_seconds())
    parts: list[str] = []
    for unit, size in UNITS.items():
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
