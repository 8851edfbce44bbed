"""The ``interval`` trigger's durations: the core's syntax (:mod:`tickwork.scheduling.durations`)
in whole numbers, positive, its errors as :class:`~tickwork.errors.TriggerError`."""

from __future__ import annotations

from datetime import timedelta

from tickwork.errors import TriggerError
from tickwork.scheduling.durations import DURATION_PATTERN, DurationError, format_duration, parse_duration

__all__ = ["DURATION_PATTERN", "format_duration", "parse_interval"]


def parse_interval(text: str) -> timedelta:
    """Parse ``<n><unit>`` parts in whole numbers (``90s``, ``1h30m``): fire times are whole
    seconds apart, and ``1.5h`` is written ``1h30m``.

    :raises TriggerError: naming the offending part (unknown unit, out of order, zero total, ...)
    """
    if "." in text:
        raise TriggerError(
            f"interval: cannot parse {text.strip()!r}: the interval is written in whole numbers, e.g. '1h30m'"
        )
    try:
        every = parse_duration(text)
    except DurationError as exc:
        raise TriggerError(f"interval: {exc}") from None
    if every <= timedelta(0):
        raise TriggerError(f"interval: the duration {text.strip()!r} must be positive")
    return every
