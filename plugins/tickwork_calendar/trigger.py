"""The ``calendar`` trigger: systemd calendar events (``systemd.time(7)``), as systemd 252 runs them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from tickwork.abc import Trigger
from tickwork.errors import TriggerError

from .libc_time import LibcClock
from .search import CompiledSpec, SearchLimitError, emulated_next
from .spec import SHORTHAND_ALIASES, USEC_PER_SEC, CalendarSpec, parse
from .zones import Zone, load_zone

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_US = timedelta(microseconds=1)
# Wall times skipped in a row (each inside a DST gap) before the fallback search gives up.
_FALLBACK_STEPS = 64

# Pieces of the cheap guess in :meth:`CalendarTrigger.recognizes`.
_WEEKDAY_LIST = re.compile(r"(?i)(mon|tue|wed|thu|fri|sat|sun)[a-z]*([,\-.]+(mon|tue|wed|thu|fri|sat|sun)[a-z]*)*,?")
_DATE = re.compile(r"[0-9*][0-9*.,/]*[-~][0-9*][0-9*.,/]*([-~][0-9*][0-9*.,/]*)?")
_EPOCH_FORM = re.compile(r"@\d+")


class CalendarTrigger(Trigger):
    """Fires at the instants a systemd calendar event elapses.

    The expression is parsed and compiled once; :meth:`next_after` then searches field by field.
    A time zone at the end of the expression (``... Europe/Berlin`` or ``... UTC``) wins over the
    ``timezone`` argument, which only applies to expressions without one, exactly as systemd uses
    the zone of the timer's expression and otherwise the machine's local zone.

    :param expression: a calendar event such as ``Mon..Fri *-*-* 09:00`` or ``hourly``
    :param timezone: IANA zone for expressions without their own zone
    :raises tickwork.errors.TriggerError: if the expression or the zone is invalid
    """

    kind: ClassVar[str] = "calendar"

    def __init__(self, expression: str, timezone: str = "UTC") -> None:
        super().__init__(expression, timezone)
        self.spec: CalendarSpec = parse(expression)
        self._compiled = CompiledSpec(self.spec)
        if not isinstance(timezone, str):
            raise TriggerError(f"time zone must be a string, not {type(timezone).__name__}")
        # The argument is checked even when the expression names its own zone: a typo should not
        # wait until the expression changes to surface.
        local_zone = None if timezone == "UTC" else load_zone(timezone)
        zone_name = None if self.spec.utc else (self.spec.timezone or timezone)
        if zone_name == timezone:
            self._zone: Zone | None = local_zone
        else:
            self._zone = None if zone_name in (None, "UTC") else load_zone(zone_name)
        #: The zone the expression is evaluated in.
        self.zone_name = zone_name or "UTC"

    @classmethod
    def recognizes(cls, expression: str) -> bool:
        """Guess whether ``expression`` is a calendar event rather than, say, a cron line.

        Calendar events have at most four space-separated parts (weekdays, date, time, zone), so
        five to seven cron fields never qualify.
        """
        words = expression.split()
        if not words or len(words) > 4:
            return False
        if _ascii_fold(words[0]) in SHORTHAND_ALIASES:
            return True
        if _EPOCH_FORM.fullmatch(words[0]):
            return True
        if _WEEKDAY_LIST.fullmatch(words[0]):
            return True
        return any(":" in word or _DATE.fullmatch(word) for word in words)

    def normalized(self) -> str:
        """Return what ``systemd-analyze calendar`` prints as "Normalized form"."""
        return self.spec.format()

    def next_after(self, after: datetime) -> datetime | None:
        """Return the first elapse strictly after ``after`` (an aware datetime), in UTC.

        Returns ``None`` when the event never elapses again, including when systemd's own search
        gives up (it stops at the end of 2199).
        """
        if after.tzinfo is None or after.utcoffset() is None:
            raise TriggerError("next_after() needs an aware datetime")
        after_us = (after - _EPOCH) // _ONE_US
        result = self._next_us(after_us)
        return None if result is None else _EPOCH + timedelta(microseconds=result)

    def _next_us(self, after_us: int) -> int | None:
        compiled = self._compiled
        if compiled.never():
            return None
        start = after_us + 1
        zone = self._zone
        if zone is None:
            found = compiled.next_wall(start)
            return None if found is None else found[0]
        second = start // USEC_PER_SEC
        offset = zone.offset(second)
        begin = start + offset * USEC_PER_SEC
        found = compiled.next_wall(begin)
        if found is None:
            return None
        wall, reach = found
        if _unique_walls(zone, second, offset, begin, reach):
            return wall - offset * USEC_PER_SEC
        # A DST change lies in the way: replay systemd's search over glibc's clock.
        clock = LibcClock(zone)
        clock.guess = -zone.offset(second)
        try:
            return emulated_next(self.spec, clock, after_us)
        except SearchLimitError:
            # systemd reports an error here and its timer would not be scheduled; a schedule is
            # better served by the plain wall-clock answer.
            return self._wall_clock_fallback(zone, after_us)

    def _wall_clock_fallback(self, zone: Zone, after_us: int) -> int | None:
        """The first matching wall time after ``after_us`` that exists in ``zone``, earliest if repeated."""
        start = after_us + 1
        wall = start + zone.offset(start // USEC_PER_SEC) * USEC_PER_SEC
        for _ in range(_FALLBACK_STEPS):
            match = self._compiled.next_wall(wall)
            if match is None:
                return None
            found = match[0]
            second = found // USEC_PER_SEC
            offsets = {zone.offset(second - 86400), zone.offset(second + 86400), zone.offset(second)}
            instants = [found - o * USEC_PER_SEC for o in offsets if zone.offset(second - o) == o]
            instants = [instant for instant in instants if instant > after_us]
            if instants:
                return min(instants)
            wall = found + 1
        return None

    def __repr__(self) -> str:
        return f"CalendarTrigger({self.expression!r}, timezone={self.timezone!r})"


def _unique_walls(zone: Zone, second: int, offset: int, begin: int, end: int) -> bool:
    """True when every wall time from ``begin`` to ``end`` (µs) exists exactly once, at ``offset``.

    Then glibc's ``mktime`` has only one answer for each step of systemd's search, whatever offset
    it used last, and the zone-free search is exact.
    """
    previous = zone.previous_change(second)
    if previous is not None:
        before = zone.offset(previous - 1)
        # Just after a fall-back the same wall times occurred before the change too.
        if before > offset and begin < (previous + before) * USEC_PER_SEC:
            return False
    following = zone.next_change(second)
    if following is None:
        return True
    after = zone.offset(following)
    return end < (following + min(offset, after)) * USEC_PER_SEC


def _ascii_fold(text: str) -> str:
    return text.lower() if text.isascii() else text
