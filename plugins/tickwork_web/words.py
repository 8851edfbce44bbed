"""Triggers in words for the dashboard: cron (5, 6 and 7 fields, ``@`` words), systemd calendar
events, intervals and one-off times.

Cron and calendar expressions are parsed by their own triggers' grammars (``tickwork_cron`` and
``tickwork_calendar``), never by a second parser here, so the words describe exactly the values
the trigger fires at. The value sets are then matched against shapes an operator reads at a
glance ("every 10 seconds", "at 09:30 on weekdays", "every 15 minutes, 09:00 through 17:45").
Anything else is shown as written (the page has the expression next to it anyway), so a
description is never wrong, only sometimes absent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tickwork.errors import TriggerError

if TYPE_CHECKING:
    from tickwork_calendar.spec import Component

#: Day names by cron number (0 and 7 are Sunday).
_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_UNITS = {"w": "week", "d": "day", "h": "hour", "m": "minute", "s": "second"}
_DURATION = re.compile(r"(\d+)\s*([wdhms])", re.IGNORECASE)
_INTERVAL = re.compile(r"^\s*(?:every\s+)?((?:\d+\s*[wdhms]\s*)+)(?:@\s*(\S+))?\s*$", re.IGNORECASE)
#: Lists longer than this are not spelled out.
_MAX_LISTED = 6
_ALL_SECONDS = frozenset(range(60))
_ALL_HOURS = frozenset(range(24))


@dataclass(frozen=True)
class Fields:
    """When a trigger fires, as value sets; ``None`` for a day field means any day.

    :param weekdays: cron numbering, 0 = Sunday
    :param both_days: a day must be in ``days`` and in ``weekdays`` (systemd calendar events);
        ``False``: in either (cron)
    """

    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int] | None
    months: frozenset[int] | None
    weekdays: frozenset[int] | None
    both_days: bool = False


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _step(values: frozenset[int], size: int) -> int | None:
    """``n`` when ``values`` is exactly 0, n, 2n, ... below ``size`` (n > 1 dividing ``size``)."""
    ordered = sorted(values)
    if len(ordered) < 2 or ordered[0] != 0:
        return None
    n = ordered[1]
    if size % n or ordered != list(range(0, size, n)):
        return None
    return n


def _run(values: frozenset[int]) -> tuple[int, int] | None:
    """``(first, last)`` when ``values`` is one contiguous range of at least three values."""
    ordered = sorted(values)
    if len(ordered) >= 3 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return ordered[0], ordered[-1]
    return None


def _clock(hour: int, minute: int, second: int) -> str:
    return f"{hour:02d}:{minute:02d}" + (f":{second:02d}" if second else "")


def _time_words(f: Fields) -> str | None:
    """The time of day part: ``at 09:30``, ``every 15 minutes``, ``every hour at minute 7`` ..."""
    sec, mins, hours = f.seconds, f.minutes, f.hours
    if mins == _ALL_SECONDS and hours == _ALL_HOURS:
        if sec == _ALL_SECONDS:
            return "every second"
        step = _step(sec, 60)
        if step:
            return f"every {_plural(step, 'second')}"
        if len(sec) == 1:
            (s,) = sec
            return "every minute" + (f" at second {s}" if s else "")
        return None
    if len(sec) != 1:
        return None
    (s,) = sec
    if len(mins) == 1:
        (m,) = mins
        if hours == _ALL_HOURS:
            return f"every hour at minute {m}" + (f", second {s}" if s else "")
        if len(hours) <= _MAX_LISTED:
            return "at " + _listed([_clock(h, m, s) for h in sorted(hours)])
        step = _step(hours, 24)
        if step:
            return f"every {_plural(step, 'hour')} at minute {m}" + (f", second {s}" if s else "")
        span = _run(hours)
        if span:
            return f"every hour, {_clock(span[0], m, s)} through {_clock(span[1], m, s)}"
        return None
    if s:
        return None
    every = "every minute" if mins == _ALL_SECONDS else None
    step = _step(mins, 60)
    if step:
        every = f"every {_plural(step, 'minute')}"
    if every is None:
        return None
    if hours == _ALL_HOURS:
        return every
    span = _run(hours) or ((min(hours), max(hours)) if len(hours) == 1 else None)
    if span is None:
        return None
    return f"{every}, {_clock(span[0], min(mins), 0)} through {_clock(span[1], max(mins), 0)}"


def _weekday_words(days: frozenset[int]) -> str:
    if days == {1, 2, 3, 4, 5}:
        return "on weekdays"
    if days == {0, 6}:
        return "on weekends"
    span = _run(days)
    if span and len(days) < 7:
        return f"on {_DAYS[span[0]]} through {_DAYS[span[1]]}"
    return "on " + _listed([_DAYS[d] + "s" for d in sorted(days)])


def _month_words(months: frozenset[int]) -> str:
    return _listed([_MONTHS[m - 1] for m in sorted(months)])


#: The week of the month a seven-day window of days is (``Fri *-*-01..07``: the first Friday).
_WEEKS = {1: "first", 8: "second", 15: "third", 22: "fourth"}


def _nth_weekday(f: Fields) -> str | None:
    """``the first Friday of the month`` for one weekday within one seven-day window of days
    (what Celery's "first Friday" becomes on import: ``Fri *-*-01..07 09:00:00``); only where a
    day must match both (a cron expression ORs them: every Friday and days 1-7)."""
    if not f.both_days or f.days is None or f.weekdays is None or len(f.weekdays) != 1:
        return None
    first = min(f.days)
    if first not in _WEEKS or f.days != frozenset(range(first, first + 7)):
        return None
    (day,) = f.weekdays
    of = "the month" if f.months is None else _month_words(f.months)
    return f"the {_WEEKS[first]} {_DAYS[day]} of {of}"


def _day_words(f: Fields) -> str | None:
    """The days part: ``every day``, ``on weekdays``, ``on day 1 of every month`` ..."""
    nth = _nth_weekday(f)
    if nth is not None:
        return f"on {nth}"
    if f.days is not None and f.weekdays is not None:
        return None  # both restricted: cron ORs them, systemd ANDs them; no short wording says which
    if f.months is not None and len(f.months) > _MAX_LISTED:
        return None
    in_months = "" if f.months is None else f" in {_month_words(f.months)}"
    if f.weekdays is not None:
        return _weekday_words(f.weekdays) + in_months
    if f.days is not None:
        if len(f.days) > _MAX_LISTED:
            return None
        which = _listed([str(d) for d in sorted(f.days)])
        of = "every month" if f.months is None else _month_words(f.months)
        return f"on day{'s' if len(f.days) > 1 else ''} {which} of {of}"
    return "every day" + in_months


def fields_words(f: Fields) -> str | None:
    time, days = _time_words(f), _day_words(f)
    if time is None or days is None:
        return None
    if days == "every day":
        return f"every day {time}" if time.startswith("at ") else time
    if days.startswith("on the ") and time.startswith("at "):
        return f"{days.removeprefix('on the ')} {time}"  # first Friday of the month at 09:00
    return f"{time} {days}"


def cron_fields(expression: str) -> Fields | None:
    """The value sets of a cron expression, by the cron trigger's own grammar."""
    from tickwork_cron.grammar import parse

    try:
        parsed = parse(expression)
    except TriggerError:
        return None
    if parsed.years is not None:
        return None
    return Fields(
        seconds=parsed.seconds,
        minutes=parsed.minutes,
        hours=parsed.hours,
        days=None if parsed.dom_star else parsed.days,
        months=None if len(parsed.months) == 12 else parsed.months,
        weekdays=None if parsed.dow_star else frozenset(d % 7 for d in parsed.weekdays),
    )


def _expand(chain: Iterable[Component] | None, low: int, high: int, unit: int = 1) -> frozenset[int] | None:
    """A calendar chain (``start[..stop][/repeat]`` items) as a value set; ``None`` for ``*``."""
    if chain is None:
        return None
    out: set[int] = set()
    for item in chain:
        start, stop, repeat = item.start, item.stop, item.repeat
        if start % unit or repeat % unit or (stop >= 0 and stop % unit):
            raise ValueError("fractional seconds")
        start, repeat = start // unit, repeat // unit
        stop = stop // unit if stop >= 0 else stop
        last = stop if stop >= 0 else (high if repeat else start)
        out.update(range(start, min(last, high) + 1, repeat or 1))
    return frozenset(v for v in out if low <= v <= high)


def calendar_fields(expression: str) -> tuple[Fields, str] | None:
    """The value sets of a calendar event, by the calendar trigger's own grammar, and the zone
    the event names itself (``""`` when it names none)."""
    from tickwork_calendar.spec import USEC_PER_SEC, parse

    try:
        spec = parse(expression)
        if spec.epoch or spec.end_of_month or spec.year is not None:
            return None
        seconds = _expand(spec.second, 0, 59, USEC_PER_SEC)
        minutes = _expand(spec.minute, 0, 59)
        hours = _expand(spec.hour, 0, 23)
        days = _expand(spec.day, 1, 31)
        months = _expand(spec.month, 1, 12)
    except (TriggerError, ValueError):
        return None
    # systemd numbers weekdays from Monday (bit 0); cron from Sunday (0).
    weekdays = None
    if 0 < spec.weekdays < 127:
        weekdays = frozenset((bit + 1) % 7 for bit in range(7) if spec.weekdays & (1 << bit))
    fields = Fields(
        seconds=_ALL_SECONDS if seconds is None else seconds,
        minutes=_ALL_SECONDS if minutes is None else minutes,
        hours=_ALL_HOURS if hours is None else hours,
        days=None if days is not None and len(days) == 31 else days,
        months=None if months is not None and len(months) == 12 else months,
        weekdays=weekdays,
        both_days=True,
    )
    zone = "UTC" if spec.utc else (spec.timezone or "")
    return fields, zone


def cron_words(expression: str) -> str | None:
    fields = cron_fields(expression)
    return None if fields is None else fields_words(fields)


def calendar_words(expression: str) -> str | None:
    found = calendar_fields(expression)
    if found is None:
        return None
    words = fields_words(found[0])
    if words is None:
        return None
    return f"{words} ({found[1]})" if found[1] else words


def interval_words(expression: str) -> str | None:
    match = _INTERVAL.match(expression)
    if match is None:
        return None
    parts = [_plural(int(n), _UNITS[u.lower()]) for n, u in _DURATION.findall(match.group(1))]
    anchor = f" from {match.group(2)}" if match.group(2) else ""
    return "every " + " ".join(parts) + anchor


def describe(kind: str, expression: str) -> str:
    """The trigger in words, e.g. ``every day at 02:00``; the expression itself if no shape fits."""
    words: str | None = None
    if kind == "cron":
        words = cron_words(expression)
    elif kind == "calendar":
        words = calendar_words(expression)
    elif kind == "interval":
        words = interval_words(expression)
    elif kind == "once":
        words = f"once, at {expression.strip()}"
    return words or f"{kind} {expression}"
