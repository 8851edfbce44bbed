"""ISO-8601 date-times as the ``once`` and ``interval`` triggers accept them, and zone loading."""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from tickwork.errors import TriggerError, did_you_mean
from tickwork.structures import iso_z

#: ``YYYY-MM-DDTHH:MM[:SS[.ffffff]]`` with an optional ``Z`` or ``+HH:MM`` offset.
ISO_PATTERN = r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:[Zz]|[+-]\d{2}:?\d{2})?"
_ISO = re.compile(ISO_PATTERN)


def load_zone(name: str) -> tzinfo:
    """Return the IANA zone ``name``.

    :raises TriggerError: if the zone is unknown
    """
    if not isinstance(name, str) or not name.strip():
        raise TriggerError(f"timezone: must be an IANA zone name such as 'Europe/Berlin', got {name!r}")
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise TriggerError(f"timezone: unknown IANA zone {name!r}{did_you_mean(name, available_timezones())}") from exc


def parse_instant(text: str, zone: tzinfo, what: str) -> datetime:
    """Parse an ISO-8601 date-time into an aware UTC datetime.

    A time without an offset is a wall time in ``zone``: one repeated by a DST fall-back means its
    first occurrence; one that a spring-forward skips does not exist and is rejected.

    :param what: the name of the part, used in error messages
    :raises TriggerError: if ``text`` is not such a date-time or names a wall time that does not exist
    """
    stripped = text.strip()
    if not _ISO.fullmatch(stripped):
        raise TriggerError(
            f"{what}: {stripped!r} is not an ISO-8601 date-time like '2026-12-01T10:00:00Z' or '2026-12-01T10:00'"
        )
    try:
        value = datetime.fromisoformat(stripped.upper())
    except ValueError as exc:
        raise TriggerError(f"{what}: {stripped!r} is not a valid date-time ({exc})") from None
    if value.tzinfo is None:
        local = value.replace(tzinfo=zone)
        if local.utcoffset() != local.replace(fold=1).utcoffset():
            instant = local.astimezone(UTC)
            if instant.astimezone(zone).replace(tzinfo=None) != value:
                raise TriggerError(
                    f"{what}: {stripped!r} does not exist in {zone} (skipped by a daylight-saving change)"
                )
        value = local
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise TriggerError(f"{what}: {stripped!r} is out of range") from None


def format_instant(value: datetime) -> str:
    """``2026-12-01T10:00:00Z`` form of an aware datetime (microseconds kept when present)."""
    return iso_z(value)
