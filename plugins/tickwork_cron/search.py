"""Finding the first wall-clock time that matches a parsed cron expression.

Works on plain integers (year, month, day, hour, minute, second) with no time zone: the trigger
maps wall times to instants. Every field is compiled into a "next allowed value" table, so the
search moves field by field and never steps through seconds or minutes one by one.
"""

from __future__ import annotations

import calendar

from .grammar import CronFields

#: Tuple of (year, month, day, hour, minute, second).
Wall = tuple[int, int, int, int, int, int]

_LAST_YEAR = 9999  # datetime cannot go further
_DAY_TABLE_LIMIT = 600  # months cached per trigger (50 years)


def _next_table(values: frozenset[int], size: int) -> tuple[int, ...]:
    """``table[i]`` = the smallest allowed value >= i, or -1; one extra slot absorbs a carry."""
    table = [-1] * (size + 1)
    following = -1
    for i in range(size - 1, -1, -1):
        if i in values:
            following = i
        table[i] = following
    return tuple(table)


def _satisfiable(fields: CronFields) -> bool:
    """Whether some (month, day) ever matches, ignoring the year (every field is non-empty)."""
    if not fields.dom_star and fields.dow_star:
        # Only the day of month counts: it must fit in one of the months (February has 29 in leap years).
        longest = max(calendar.monthrange(2000, month)[1] for month in fields.months)
        return min(fields.days) <= longest
    return True  # the weekday counts, and every month has every weekday


class WallSearch:
    """The compiled form of a :class:`CronFields`: answers "first match at or after this wall time"."""

    def __init__(self, fields: CronFields) -> None:
        self.fields = fields
        self._seconds = _next_table(fields.seconds, 60)
        self._minutes = _next_table(fields.minutes, 60)
        self._hours = _next_table(fields.hours, 24)
        self._months = _next_table(fields.months, 13)
        if fields.years is None:
            self._years: tuple[int, ...] | None = None
            self._first_year = 1
            self._last_year = _LAST_YEAR
        else:
            self._years = _next_table(fields.years, max(fields.years) + 1)
            self._first_year = min(fields.years)
            self._last_year = max(fields.years)
        self.never = not _satisfiable(fields)
        # A month's day table depends only on its length and first weekday: at most 28 shapes,
        # shared through a small (year * 16 + month) -> table index filled on first use.
        self._shape_tables: dict[int, tuple[int, ...]] = {}
        self._day_tables: dict[int, tuple[int, ...]] = {}

    def _day_table(self, year: int, month: int) -> tuple[int, ...]:
        """``table[d]`` = the first matching day >= d in that month, or 0; indexes up to 32."""
        # Cron counts Sunday as 0; monthrange() counts Monday as 0.
        weekday, length = calendar.monthrange(year, month)
        shape = length * 7 + (weekday + 1) % 7
        result = self._shape_tables.get(shape)
        if result is None:
            result = self._shape_tables[shape] = self._shape_table(length, (weekday + 1) % 7)
        if len(self._day_tables) >= _DAY_TABLE_LIMIT:
            self._day_tables.clear()  # a trigger walked far through time; keep memory bounded
        self._day_tables[year * 16 + month] = result
        return result

    def _shape_table(self, length: int, first_weekday: int) -> tuple[int, ...]:
        """The day table of any month with ``length`` days starting on ``first_weekday`` (0 = Sunday)."""
        fields = self.fields
        table = [0] * 34
        following = 0
        for day in range(length, 0, -1):
            dom_ok = day in fields.days
            dow_ok = (first_weekday + day - 1) % 7 in fields.weekdays
            if fields.dom_star:
                ok = dow_ok
            elif fields.dow_star:
                ok = dom_ok
            else:
                ok = dom_ok or dow_ok  # both restricted: either matching fires (Vixie cron)
            if ok:
                following = day
            table[day] = following
        return tuple(table)

    def first_at_or_after(self, y: int, mo: int, d: int, h: int, mi: int, s: int) -> Wall | None:
        """The first matching wall time at or after the given one, or None if there is none.

        ``s`` may be 60 (and the other fields one past their end) to mean "carry into the next
        unit", which is how callers ask for "strictly after".
        """
        if self.never:
            return None
        seconds, minutes, hours, months, years = self._seconds, self._minutes, self._hours, self._months, self._years
        day_tables = self._day_tables
        if y < self._first_year:
            y, mo, d, h, mi, s = self._first_year, 1, 1, 0, 0, 0
        while True:
            if y > self._last_year:
                return None
            if years is not None:
                ny = years[y]
                if ny < 0:
                    return None
                if ny != y:
                    y, mo, d, h, mi, s = ny, 1, 1, 0, 0, 0
            nmo = months[mo]
            if nmo < 0:
                y, mo, d, h, mi, s = y + 1, 1, 1, 0, 0, 0
                continue
            if nmo != mo:
                mo, d, h, mi, s = nmo, 1, 0, 0, 0
            table = day_tables.get(y * 16 + mo)
            if table is None:
                table = self._day_table(y, mo)
            nd = table[d]
            if nd == 0:
                mo, d, h, mi, s = mo + 1, 1, 0, 0, 0
                continue
            if nd != d:
                d, h, mi, s = nd, 0, 0, 0
            nh = hours[h]
            if nh < 0:
                d, h, mi, s = d + 1, 0, 0, 0
                continue
            if nh != h:
                h, mi, s = nh, 0, 0
            nmi = minutes[mi]
            if nmi < 0:
                h, mi, s = h + 1, 0, 0
                continue
            if nmi != mi:
                mi, s = nmi, 0
            ns = seconds[s]
            if ns < 0:
                mi, s = mi + 1, 0
                continue
            return y, mo, d, h, mi, ns
