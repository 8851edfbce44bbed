"""Triggers in words for the schedules table: the common cron shapes, intervals and one-off
times. Anything else is shown as written (the table has the expression next to it anyway), so a
description is never wrong, only sometimes absent."""

from __future__ import annotations

import re

_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NUMBER = re.compile(r"^\d{1,2}$")
_STEP = re.compile(r"^\*/(\d{1,2})$")
_UNITS = {"w": "week", "d": "day", "h": "hour", "m": "minute", "s": "second"}
_DURATION = re.compile(r"(\d+)\s*([wdhms])", re.IGNORECASE)
_INTERVAL = re.compile(r"^\s*(?:every\s+)?((?:\d+\s*[wdhms]\s*)+)(?:@\s*(\S+))?\s*$", re.IGNORECASE)


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def _days(field: str) -> str | None:
    if field == "1-5":
        return "on weekdays"
    if field in ("0,6", "6,0", "6-7", "sat,sun", "SAT,SUN"):
        return "on weekends"
    if _NUMBER.match(field) and int(field) <= 7:
        return f"on {_DAYS[int(field)]}s"
    return None


def cron_words(expression: str) -> str | None:
    fields = expression.split()
    if len(fields) != 5:
        return None
    minute, hour, dom, month, dow = fields
    if (dom, month) != ("*", "*") and not (_NUMBER.match(dom) and month == "*" and dow == "*"):
        return None
    if (minute, hour, dom, dow) == ("*", "*", "*", "*"):
        return "every minute"
    step = _STEP.match(minute)
    if step and (hour, dom, dow) == ("*", "*", "*"):
        return f"every {_plural(int(step.group(1)), 'minute')}"
    if not _NUMBER.match(minute):
        return None
    if hour == "*" and (dom, dow) == ("*", "*"):
        return f"every hour at minute {int(minute)}"
    if not _NUMBER.match(hour):
        return None
    at = f"at {int(hour):02d}:{int(minute):02d}"
    if dom != "*":
        return f"{at} on day {int(dom)} of every month"
    if dow == "*":
        return f"every day {at}"
    days = _days(dow)
    return None if days is None else f"{at} {days}"


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
    elif kind == "interval":
        words = interval_words(expression)
    elif kind == "once":
        words = f"once, at {expression.strip()}"
    elif kind == "calendar":
        words = f"calendar event {expression.strip()}"
    return words or f"{kind} {expression}"
