"""Finding the next elapse of a :class:`~tickwork_calendar.spec.CalendarSpec`.

systemd searches field by field (year, month, day, weekday, hour, minute, second): each field
jumps to the smallest allowed value at or after the current one, and when a value runs past its
field (a repetition such as ``*:0/25`` reaching minute 75) the time is normalized the way
``mktime`` does and the search starts over from there. That normalization resets only the field
just below the highest one that changed, so an overflow that carries across two fields keeps its
remainder (``*:0/25`` at 23:50 continues at 00:15 of the next day and never fires at 00:00 after
midnight). Both searches below reproduce this.

* :meth:`CompiledSpec.next_wall` works on wall-clock microseconds with precomputed tables and no
  time zone at all; it is exact whenever the UTC offset does not change between the start and the
  result, which is always the case in UTC and almost always elsewhere.
* :func:`emulated_next` replays systemd's loop step by step over :class:`LibcClock`, glibc's
  ``mktime`` included, for the searches that do cross a DST change.
"""

from __future__ import annotations

from .libc_time import HOUR, ISDST, MDAY, MIN, MON, SEC, YEAR, LibcClock, Tm, weekday
from .spec import MAX_YEAR, USEC_PER_SEC, CalendarSpec, Chain, Component
from .zones import civil_from_days, days_from_civil

_US_PER_MINUTE = 60 * USEC_PER_SEC
_US_PER_HOUR = 60 * _US_PER_MINUTE
_US_PER_DAY = 24 * _US_PER_HOUR
_DAYS_IN_MONTH = (
    (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31),
    (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31),
)
#: systemd gives up (EDEADLK) after this many passes of its loop.
MAX_ITERATIONS = 1000
_NONE = -1


class SearchLimitError(Exception):
    """systemd's own search would stop with an error here (its iteration guard or mktime failed)."""


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def match_value(chain: Chain | None, value: int) -> int:
    """The smallest value of ``chain`` at or after ``value``; ``value`` for "*"; -1 if none.

    Repetitions without a stop continue past the field's range, as in systemd.
    """
    if chain is None:
        return value
    best = _NONE
    for comp in chain:
        if comp.start >= value:
            candidate = comp.start
        elif comp.repeat > 0:
            candidate = comp.start + comp.repeat * -((comp.start - value) // comp.repeat)
            if comp.stop >= 0 and candidate > comp.stop:
                continue
        else:
            continue
        if best == _NONE or candidate < best:
            best = candidate
    return best


def _end_of_month_chain(chain: Chain, days_in_month: int) -> Chain:
    """Turn "days before the month's end" into plain days for a month of the given length."""
    out: list[Component] = []
    for comp in chain:
        start = days_in_month + 1 - comp.start
        stop = days_in_month + 1 - comp.stop if comp.stop >= 0 else -1
        if stop > 0:
            start, stop = stop, start
        out.append(Component(start, stop, comp.repeat))
    return tuple(out)


def _table(chain: Chain | None, low: int, high: int) -> list[int]:
    """``match_value`` for every value in ``0..high`` (entries below ``low`` are unused)."""
    return [match_value(chain, value) if value >= low else _NONE for value in range(high + 1)]


class CompiledSpec:
    """A calendar spec turned into lookup tables for :meth:`next_wall`."""

    def __init__(self, spec: CalendarSpec) -> None:
        self.spec = spec
        self.year_chain = spec.year
        self.years = [match_value(spec.year, year) for year in range(1970, MAX_YEAR + 1)]
        self.months = _table(spec.month, 1, 12)
        # Day tables by month length: raw next values (may run past the month) and in-month masks.
        self.days: dict[int, list[int]] = {}
        self.day_masks: dict[int, int] = {}
        for length in (28, 29, 30, 31):
            chain = spec.day
            if chain is not None and spec.end_of_month:
                chain = _end_of_month_chain(chain, length)
            table = _table(chain, 1, 32)
            self.days[length] = table
            self.day_masks[length] = sum(1 << day for day in range(1, length + 1) if table[day] == day)
        self.weekdays = spec.weekdays
        # Days 1..31 allowed by the weekday list, for each weekday of the 1st (0 = Monday).
        self.weekday_masks = [
            sum(1 << day for day in range(1, 32) if spec.weekdays < 0 or spec.weekdays >> ((first + day - 1) % 7) & 1)
            for first in range(7)
        ]
        self.hours = _table(spec.hour, 0, 23)
        self.minutes = _table(spec.minute, 0, 59)
        self.second_chain = spec.second
        self.whole_seconds = all(
            comp.start % USEC_PER_SEC == 0
            and comp.repeat % USEC_PER_SEC == 0
            and (comp.stop < 0 or comp.stop % USEC_PER_SEC == 0)
            for comp in spec.second
        )
        self.seconds = [match_value(spec.second, second * USEC_PER_SEC) for second in range(61)]
        self.last_month = self._last_possible_month()

    def _last_possible_month(self) -> int:
        """``year * 12 + month - 1`` of the last month with an allowed day, or -1 if there is none.

        Overflow quirks only ever drop elapses, so nothing can fire after that month.
        """
        if self.year_chain is None:
            years: list[int] = list(range(MAX_YEAR, 1969, -1))
        else:
            years = sorted({y for y in self.years if 1970 <= y <= MAX_YEAR}, reverse=True)
        months = [m for m in range(12, 0, -1) if self.months[m] == m]
        for year in years:
            for month in months:
                length = _DAYS_IN_MONTH[_is_leap(year)][month]
                first = (days_from_civil(year, month, 1) + 3) % 7
                if self.day_masks[length] & self.weekday_masks[first]:
                    return year * 12 + month - 1
        return _NONE

    def never(self) -> bool:
        """True when no date at all can match (e.g. ``*-02-30``)."""
        return self.last_month == _NONE

    # -- the zone-free search -----------------------------------------------------------------------

    def _next_second(self, value: int) -> int:
        if self.whole_seconds:
            second, fraction = divmod(value, USEC_PER_SEC)
            return self.seconds[second + 1 if fraction else second]
        return match_value(self.second_chain, value)

    def next_wall(self, wall: int) -> tuple[int, int] | None:
        """Return the first matching wall-clock microsecond at or after ``wall`` (no DST).

        The second item is the furthest wall time the search looked at: an overflow (``*-*-1/20``
        reaching day 41) makes systemd normalize a time beyond the answer, and a DST change up to
        there can still steer it.
        """
        reach = wall
        days, rest = divmod(wall, _US_PER_DAY)
        year, month, day = civil_from_days(days)
        hour, rest = divmod(rest, _US_PER_HOUR)
        minute, rest = divmod(rest, _US_PER_MINUTE)
        second, usec = divmod(rest, USEC_PER_SEC)
        while True:
            # -- year
            if year > MAX_YEAR:
                return None
            if self.year_chain is not None:
                found = self.years[year - 1970] if year >= 1970 else self.years[0]
                if found == _NONE or found > MAX_YEAR:
                    return None
                if found != year:
                    year, month, day, hour, minute, second, usec = found, 1, 1, 0, 0, 0, 0
            # -- month
            found = self.months[month]
            if found == _NONE:
                year, month, day, hour, minute, second, usec = year + 1, 1, 1, 0, 0, 0, 0
                continue
            if found != month:
                if found > 12:
                    # Normalization carries into the year and restarts at January.
                    year, month, day, hour, minute, second, usec = year + 1, 1, 1, 0, 0, 0, 0
                    continue
                month, day, hour, minute, second, usec = found, 1, 0, 0, 0, 0
            if year * 12 + month - 1 > self.last_month:
                return None
            # -- day and weekday
            length = _DAYS_IN_MONTH[_is_leap(year)][month]
            table = self.days[length]
            found = table[day]
            if found == _NONE:
                year, month, day, hour, minute, second, usec = _next_month(year, month)
                continue
            if found > length:
                reach = max(reach, _wall_us(year, month, found, 0, 0, 0))
                year, month, day, hour, minute, second = _overflow(year, month, found, 0, 0, 0)
                usec = 0
                continue
            if found != day:
                day, hour, minute, second, usec = found, 0, 0, 0, 0
            if self.weekdays >= 0:
                first = (days_from_civil(year, month, 1) + 3) % 7
                allowed = self.day_masks[length] & self.weekday_masks[first]
                if not allowed >> day & 1:
                    later = allowed >> (day + 1)
                    if later:
                        day += (later & -later).bit_length()
                        hour, minute, second, usec = 0, 0, 0, 0
                    else:
                        # systemd steps past the last in-month match; what follows may overflow.
                        matches = self.day_masks[length] >> day << day
                        day = matches.bit_length()
                        hour, minute, second, usec = 0, 0, 0, 0
                        if day > length:
                            year, month, day, hour, minute, second, usec = _next_month(year, month)
                        continue
            # -- hour
            found = self.hours[hour]
            if found == _NONE:
                year, month, day, hour, minute, second, usec = _next_day(year, month, day, length)
                continue
            if found != hour:
                if found > 23:
                    reach = max(reach, _wall_us(year, month, day, found, 0, 0))
                    year, month, day, hour, minute, second = _overflow(year, month, day, found, 0, 0)
                    usec = 0
                    continue
                hour, minute, second, usec = found, 0, 0, 0
            # -- minute
            found = self.minutes[minute]
            if found == _NONE:
                year, month, day, hour, minute, second, usec = _next_hour(year, month, day, hour, length)
                continue
            if found != minute:
                if found > 59:
                    reach = max(reach, _wall_us(year, month, day, hour, found, 0))
                    year, month, day, hour, minute, second = _overflow(year, month, day, hour, found, 0)
                    usec = 0
                    continue
                minute, second, usec = found, 0, 0
            # -- second
            found = self._next_second(second * USEC_PER_SEC + usec)
            if found == _NONE:
                year, month, day, hour, minute, second, usec = _next_minute(year, month, day, hour, minute, length)
                continue
            second, usec = divmod(found, USEC_PER_SEC)
            if second > 59:
                # The fraction survives the normalization: systemd keeps it apart from struct tm.
                reach = max(reach, _wall_us(year, month, day, hour, minute, second))
                year, month, day, hour, minute, second = _overflow(year, month, day, hour, minute, second)
                continue
            found = _wall_us(year, month, day, hour, minute, second) + usec
            return found, max(reach, found)


def _wall_us(year: int, month: int, day: int, hour: int, minute: int, second: int) -> int:
    return (
        days_from_civil(year, month, day) * _US_PER_DAY
        + hour * _US_PER_HOUR
        + minute * _US_PER_MINUTE
        + second * USEC_PER_SEC
    )


def _next_month(year: int, month: int) -> tuple[int, int, int, int, int, int, int]:
    if month == 12:
        return year + 1, 1, 1, 0, 0, 0, 0
    return year, month + 1, 1, 0, 0, 0, 0


def _next_day(year: int, month: int, day: int, length: int) -> tuple[int, int, int, int, int, int, int]:
    if day >= length:
        return _next_month(year, month)
    return year, month, day + 1, 0, 0, 0, 0


def _next_hour(year: int, month: int, day: int, hour: int, length: int) -> tuple[int, int, int, int, int, int, int]:
    if hour >= 23:
        return _next_day(year, month, day, length)
    return year, month, day, hour + 1, 0, 0, 0


def _next_minute(
    year: int, month: int, day: int, hour: int, minute: int, length: int
) -> tuple[int, int, int, int, int, int, int]:
    if minute >= 59:
        return _next_hour(year, month, day, hour, length)
    return year, month, day, hour, minute + 1, 0, 0


def _overflow(
    year: int, month: int, day: int, hour: int, minute: int, second: int
) -> tuple[int, int, int, int, int, int]:
    """Normalize fields of which one ran past its range.

    Mirrors systemd's bounds check: after normalizing, only the field just below the highest
    field that changed is reset; the others keep their normalized values.
    """
    before = (year, month, day, hour, minute, second)
    total = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    days, rest = divmod(total, 86400)
    after_date = civil_from_days(days)
    after = [*after_date, rest // 3600, rest // 60 % 60, rest % 60]
    minimum = (0, 1, 1, 0, 0, 0)
    for index in range(6):
        if after[index] != before[index]:
            if index < 5:
                after[index + 1] = minimum[index + 1]
            break
    return after[0], after[1], after[2], after[3], after[4], after[5]


# -- systemd's loop over glibc's clock, for searches that cross a DST change ------------------------


def _end_of_month_day(clock: LibcClock, tm: Tm, day: int) -> int:
    probe = list(tm)
    probe[MON] += 1
    probe[MDAY] = 1 - day
    t = clock.mktime(probe)
    if t is None or t < 0 or probe[MON] != tm[MON]:
        return _NONE
    return probe[MDAY]


def _match_day(spec: CalendarSpec, clock: LibcClock, tm: Tm) -> int:
    if spec.day is None or not spec.end_of_month:
        return match_value(spec.day, tm[MDAY])
    # Every bound is recomputed through mktime, as systemd does; the calls also move its guess.
    converted: list[Component] = []
    for comp in spec.day:
        start = _end_of_month_day(clock, tm, comp.start)
        stop = _end_of_month_day(clock, tm, comp.stop)
        if stop > 0:
            start, stop = stop, start
        converted.append(Component(start, stop, comp.repeat))
    return match_value(tuple(converted), tm[MDAY])


def _within_bounds(clock: LibcClock, tm: Tm) -> int:
    """1 if ``tm`` exists as is, 0 if it was normalized forward (``tm`` updated), -1 otherwise."""
    if tm[YEAR] > MAX_YEAR:
        return -1
    probe = list(tm)
    t = clock.mktime(probe)
    if t is None or t < 0:
        return -1
    order = 0
    minimum = (0, 0, 1, 0, 0, 0)
    for index in range(6):
        if probe[index] != tm[index]:
            order = 1 if probe[index] > tm[index] else -1
            if index < 5:
                probe[index + 1] = minimum[index + 1]
            break
    if order < 0:
        return -1
    if order > 0:
        tm[:] = probe
        return 0
    return 1


def _weekday_matches(spec: CalendarSpec, clock: LibcClock, tm: Tm) -> bool:
    if spec.weekdays < 0:
        return True
    probe = list(tm)
    t = clock.mktime(probe)
    if t is None or t < 0:
        return False
    return bool(spec.weekdays >> weekday(probe) & 1)


def emulated_next(spec: CalendarSpec, clock: LibcClock, after: int) -> int | None:
    """Return the first elapse after UTC microsecond ``after`` exactly as systemd computes it.

    :raises SearchLimitError: where systemd's search fails instead of answering
    """
    start = after + 1
    tm = clock.localtime(start // USEC_PER_SEC)
    usec = start % USEC_PER_SEC
    origin = (*tm[:6], usec)
    # Once mktime has moved the search backwards, systemd keeps the DST flag mktime chose
    # instead of asking for "either" again, which is how it gets past the gap.
    keep_dst = False

    def reset_below(index: int) -> None:
        nonlocal usec
        for field, value in ((MON, 0), (MDAY, 1), (HOUR, 0), (MIN, 0), (SEC, 0)):
            if field > index:
                tm[field] = value
        usec = 0

    for _ in range(MAX_ITERATIONS):
        clock.mktime(tm)
        if not keep_dst:
            tm[ISDST] = -1

        found = match_value(spec.year, tm[YEAR])
        if found == _NONE:
            return None
        if found != tm[YEAR]:
            tm[YEAR] = found
            reset_below(YEAR)
        if _within_bounds(clock, tm) <= 0:
            return None

        found = match_value(spec.month, tm[MON] + 1)
        state = _NONE if found == _NONE else int(found != tm[MON] + 1)
        if state >= 0:
            tm[MON] = found - 1
        if state > 0:
            reset_below(MON)
        if state >= 0:
            state = _within_bounds(clock, tm)
        if state < 0:
            tm[YEAR] += 1
            reset_below(YEAR)
            continue
        if state == 0:
            continue

        found = _match_day(spec, clock, tm)
        state = _NONE if found == _NONE else int(found != tm[MDAY])
        if state >= 0:
            tm[MDAY] = found
        if state > 0:
            reset_below(MDAY)
        if state >= 0:
            state = _within_bounds(clock, tm)
        if state < 0:
            tm[MON] += 1
            reset_below(MON)
            continue
        if state == 0:
            continue

        if not _weekday_matches(spec, clock, tm):
            tm[MDAY] += 1
            reset_below(MDAY)
            continue

        found = match_value(spec.hour, tm[HOUR])
        state = _NONE if found == _NONE else int(found != tm[HOUR])
        if state >= 0:
            tm[HOUR] = found
        if state > 0:
            reset_below(HOUR)
        if state >= 0:
            state = _within_bounds(clock, tm)
        if state < 0:
            tm[MDAY] += 1
            reset_below(MDAY)
            continue
        if state == 0:
            continue

        found = match_value(spec.minute, tm[MIN])
        state = _NONE if found == _NONE else int(found != tm[MIN])
        if state >= 0:
            tm[MIN] = found
        if state > 0:
            reset_below(MIN)
        if state >= 0:
            state = _within_bounds(clock, tm)
        if state < 0:
            tm[HOUR] += 1
            reset_below(HOUR)
            continue
        if state == 0:
            continue

        current = tm[SEC] * USEC_PER_SEC + usec
        found = match_value(spec.second, current)
        state = _NONE if found == _NONE else int(found != current)
        if state >= 0:
            tm[SEC], usec = divmod(found, USEC_PER_SEC)
        if state >= 0:
            state = _within_bounds(clock, tm)
        if state < 0:
            tm[MIN] += 1
            reset_below(MIN)
            continue
        if state == 0:
            continue

        if (*tm[:6], usec) < origin:
            # Normalization took the search back before its start: retry an hour later.
            tm[HOUR] += 1
            keep_dst = True
            continue

        t = clock.mktime(tm)
        if t is None or t < 0:
            raise SearchLimitError("mktime failed on the result")
        return t * USEC_PER_SEC + usec
    raise SearchLimitError(f"no answer after {MAX_ITERATIONS} steps")
