"""The ``once`` trigger: fires a single time at a given date-time."""

from __future__ import annotations

import re
from datetime import datetime
from typing import ClassVar

from tickwork.abc import Trigger

from .isotime import ISO_PATTERN, format_instant, load_zone, parse_instant

_RECOGNIZED = re.compile(rf"\s*{ISO_PATTERN}\s*")


class OnceTrigger(Trigger):
    """Fires once, at an ISO-8601 date-time such as ``2026-12-01T10:00:00Z``.

    A date-time without an offset is a wall time in ``timezone`` (a repeated wall time means its
    first occurrence; one skipped by a DST change is rejected).

    :raises TriggerError: if the date-time or the zone is invalid
    """

    kind: ClassVar[str] = "once"

    def __init__(self, expression: str, timezone: str = "UTC") -> None:
        super().__init__(expression, timezone)
        self.at: datetime = parse_instant(expression, load_zone(timezone), "once")

    @classmethod
    def recognizes(cls, expression: str) -> bool:
        """True for an ISO-8601 date-time with a ``T`` between date and time."""
        return isinstance(expression, str) and _RECOGNIZED.fullmatch(expression) is not None

    def normalized(self) -> str:
        """The fire time in UTC, ``2026-12-01T10:00:00Z``."""
        return format_instant(self.at)

    def __repr__(self) -> str:
        return f"OnceTrigger({self.expression!r}, {self.timezone!r})"

    def next_after(self, after: datetime) -> datetime | None:
        """The fire time if it is strictly after ``after``, else None."""
        if after.utcoffset() is None:
            raise ValueError(f"after: must be a timezone-aware datetime, got {after!r}")
        return self.at if after < self.at else None
