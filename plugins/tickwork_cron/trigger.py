"""The ``cron`` trigger: classic cron expressions evaluated in an IANA time zone.

DST rules (see docs/triggers.md), following Vixie cron's split between "clock-following" and
"fixed-time" schedules, decided by how the hour field is written:

* hour field starting with ``*`` (``*``, ``*/2``, ``*/3``): the schedule follows the clock as it
  is. Wall times skipped by a spring-forward gap do not fire; wall times repeated by a fall-back
  fire at both occurrences (an hourly job still runs every real hour).
* any other hour field (``2``, ``1-23/2``, ``0-23``): a wall time that does not exist fires once
  at the first instant after the gap; a repeated wall time fires once, at its first occurrence.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import ClassVar

from tickwork.abc import Trigger

from .grammar import CronFields, parse, render
from .search import Wall, WallSearch
from .zones import load_zone, transition

_FIELD = r"(?:[0-9*?#/,\-LW]|[A-Za-z]{3})+"
_RECOGNIZED = re.compile(rf"\s*(?:@[A-Za-z]+|{_FIELD}(?:\s+{_FIELD}){{4,6}})\s*")


def _as_tuple(wall: datetime) -> Wall:
    return wall.year, wall.month, wall.day, wall.hour, wall.minute, wall.second


class CronTrigger(Trigger):
    """Fires at the times a cron expression matches, evaluated in ``timezone``.

    :param expression: 5 fields ``min hour dom month dow``, 6 with seconds first, 7 with a year
        last, or an ``@hourly``-style word
    :param timezone: IANA zone name
    :raises TriggerError: if the expression or the zone is invalid; the message names the part
    """

    kind: ClassVar[str] = "cron"

    def __init__(self, expression: str, timezone: str = "UTC") -> None:
        super().__init__(expression, timezone)
        self.fields: CronFields = parse(expression)
        self._search = WallSearch(self.fields)
        self._zone = load_zone(timezone)
        self._every_hour = self.fields.every_hour

    @classmethod
    def recognizes(cls, expression: str) -> bool:
        """True for 5 to 7 whitespace-separated fields of cron characters, or an ``@word``."""
        return isinstance(expression, str) and _RECOGNIZED.fullmatch(expression) is not None

    def normalized(self) -> str:
        """The canonical 6-field form (seconds first; a 7th field only when the year is restricted)."""
        return render(self.fields)

    def __repr__(self) -> str:
        return f"CronTrigger({self.expression!r}, {self.timezone!r})"

    def next_after(self, after: datetime) -> datetime | None:
        """The first fire time strictly after ``after``, as an aware UTC datetime, or None."""
        if after.tzinfo is not UTC:
            if after.utcoffset() is None:
                raise ValueError(f"after: must be a timezone-aware datetime, got {after!r}")
            if self._zone is not UTC:
                return self._next_zoned(after)
            after = after.astimezone(UTC)
        elif self._zone is not UTC:
            return self._next_zoned(after)
        found = self._search.first_at_or_after(
            after.year, after.month, after.day, after.hour, after.minute, after.second + 1
        )
        if found is None:
            return None
        return datetime(*found, tzinfo=UTC)

    def _next_zoned(self, after: datetime) -> datetime | None:
        zone = self._zone
        search = self._search.first_at_or_after
        local = after.astimezone(zone)
        # Plain constructors rather than replace(): this is the hot path and replace() is slower.
        y, mo, d, h, mi, s = local.year, local.month, local.day, local.hour, local.minute, local.second
        start: Wall = (y, mo, d, h, mi, s + 1)
        offset = local.utcoffset()
        other = datetime(y, mo, d, h, mi, s, 0, zone, fold=1 - local.fold).utcoffset()
        assert offset is not None and other is not None
        if offset != other:
            # ``after`` falls in a repeated (fall-back) stretch of wall time: fold 0 is its first pass.
            wall = datetime(y, mo, d, h, mi, s)
            before, later = (offset, other) if local.fold == 0 else (other, offset)
            switch = transition(zone, (wall - before).replace(tzinfo=UTC), (wall - later).replace(tzinfo=UTC), later)
            repeat_start = (switch + later).replace(tzinfo=None)
            repeat_end = (switch + before).replace(tzinfo=None)
            if local.fold == 0:
                found = search(*start)
                if found is not None and datetime(*found) < repeat_end:
                    return datetime(*found, tzinfo=UTC) - before
            if self._every_hour:
                found = search(*(start if local.fold == 1 else _as_tuple(repeat_start)))
                if found is not None and datetime(*found) < repeat_end:
                    return datetime(*found, tzinfo=UTC) - later
            start = _as_tuple(repeat_end)
        while True:  # each pass moves ``start`` strictly forward; the search ends at year 9999
            found = search(*start)
            if found is None:
                return None
            first = datetime(*found, tzinfo=zone).utcoffset()
            second = datetime(*found, tzinfo=zone, fold=1).utcoffset()
            assert first is not None and second is not None
            if first >= second:
                # Normal, or repeated (first > second): the first occurrence; later ones come from above.
                result = datetime(*found, tzinfo=UTC) - first
                if result > after:
                    return result
                start = (*found[:5], found[5] + 1)
                continue
            # The wall time does not exist (spring-forward gap).
            naive = datetime(*found)
            switch = transition(zone, (naive - second).replace(tzinfo=UTC), (naive - first).replace(tzinfo=UTC), second)
            if not self._every_hour and switch > after:
                return switch
            start = _as_tuple((switch + second).replace(tzinfo=None))
