"""Time-zone helpers: loading IANA zones and locating DST transitions around a wall time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from tickwork.errors import TriggerError, did_you_mean

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: Zone names evaluated with the fixed ``datetime.UTC`` (no transitions, so a faster path).
UTC_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"})


def load_zone(name: str) -> tzinfo:
    """Return the zone called ``name`` (``datetime.UTC`` for the UTC aliases).

    :raises TriggerError: if ``name`` is not a known IANA zone
    """
    if not isinstance(name, str) or not name.strip():
        raise TriggerError(f"timezone: must be an IANA zone name such as 'Europe/Berlin', got {name!r}")
    if name in UTC_NAMES:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise TriggerError(f"timezone: unknown IANA zone {name!r}{did_you_mean(name, available_timezones())}") from exc


def transition(zone: tzinfo, low: datetime, high: datetime, offset_after: timedelta) -> datetime:
    """The first instant in ``(low, high]`` (UTC, whole seconds) whose UTC offset is ``offset_after``.

    The caller guarantees the offset changes exactly once in that interval, so bisection is exact.
    """
    lo = int((low - EPOCH).total_seconds())
    hi = int((high - EPOCH).total_seconds())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).utcoffset() == offset_after:
            hi = mid
        else:
            lo = mid
    return EPOCH + timedelta(seconds=hi)
