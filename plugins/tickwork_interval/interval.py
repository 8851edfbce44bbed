"""The ``interval`` trigger: a fixed elapsed duration, anchored so that fire times never drift."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from tickwork.abc import Trigger
from tickwork.errors import TriggerError

from .durations import DURATION_PATTERN, format_duration, parse_interval
from .isotime import ISO_PATTERN, format_instant, load_zone, parse_instant

#: The default anchor: every node computes the same fire times without sharing any state.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_EVERY = re.compile(r"\s*every\s+", re.IGNORECASE)
_RECOGNIZED = re.compile(rf"\s*(?:every\s+)?{DURATION_PATTERN}(?:@\s*{ISO_PATTERN})?\s*", re.IGNORECASE)


class IntervalTrigger(Trigger):
    """Fires every ``duration`` of elapsed time at ``anchor + k * duration`` for ``k >= 0``.

    Expression: ``[every ]<duration>[@<anchor>]``, e.g. ``90s``, ``every 1h30m``,
    ``2d@2026-01-01T00:00:00Z``. The duration is elapsed time (units ``w d h m s``), so DST changes
    do not stretch it. The anchor is the first fire time (default: the Unix epoch); an anchor
    without an offset is a wall time in ``timezone``.

    :raises TriggerError: if the duration, the anchor or the zone is invalid
    """

    kind: ClassVar[str] = "interval"

    def __init__(self, expression: str, timezone: str = "UTC") -> None:
        super().__init__(expression, timezone)
        if not isinstance(expression, str):
            raise TriggerError(f"interval: expression must be a string, got {type(expression).__name__}")
        zone = load_zone(timezone)
        text = _EVERY.sub("", expression, count=1) if _EVERY.match(expression) else expression
        duration_text, at, anchor_text = text.partition("@")
        self.every: timedelta = parse_interval(duration_text)
        self.anchor: datetime = parse_instant(anchor_text, zone, "interval anchor") if at else EPOCH

    @classmethod
    def recognizes(cls, expression: str) -> bool:
        """True for ``[every ]<duration>[@<ISO date-time>]``."""
        return isinstance(expression, str) and _RECOGNIZED.fullmatch(expression) is not None

    def normalized(self) -> str:
        """``<duration>`` in largest units, plus ``@<anchor in UTC>`` unless anchored at the epoch."""
        duration = format_duration(self.every)
        return duration if self.anchor == EPOCH else f"{duration}@{format_instant(self.anchor)}"

    def __repr__(self) -> str:
        return f"IntervalTrigger({self.expression!r}, {self.timezone!r})"

    def next_after(self, after: datetime) -> datetime | None:
        """``anchor`` if ``after`` is before it, else the first ``anchor + k * every`` after ``after``."""
        if after.utcoffset() is None:
            raise ValueError(f"after: must be a timezone-aware datetime, got {after!r}")
        if after < self.anchor:
            return self.anchor
        steps = (after - self.anchor) // self.every + 1
        try:
            return self.anchor + steps * self.every
        except OverflowError:
            return None
