"""The cron expression grammar: parsing fields into value sets and rendering them back.

Supported (see docs/triggers.md): 5 fields ``min hour dom month dow``, 6 fields with seconds
*first*, 7 fields adding a year last; ``*``, values, ranges ``a-b``, steps ``*/n``, ``a-b/n`` and
``a/n``, lists, month and weekday names, and the ``@hourly``-style words. ``?``, ``L``, ``W``,
``#`` and ``@reboot`` are rejected with a message saying they are not supported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from tickwork.errors import TriggerError

#: Years a 7th field may name (a bare ``*`` there, or no 7th field, means any year).
MIN_YEAR = 1970
MAX_YEAR = 2199

MONTH_NAMES = {
    name: i
    for i, name in enumerate(("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"), 1)
}
DOW_NAMES = {name: i for i, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))}

WORDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


@dataclass(frozen=True)
class FieldDef:
    """One position of a cron expression: its name, value range and accepted names."""

    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


SECOND = FieldDef("second", 0, 59)
MINUTE = FieldDef("minute", 0, 59)
HOUR = FieldDef("hour", 0, 23)
DAY_OF_MONTH = FieldDef("day-of-month", 1, 31)
MONTH = FieldDef("month", 1, 12, MONTH_NAMES)
# 7 is accepted as Sunday and folded onto 0 after parsing.
DAY_OF_WEEK = FieldDef("day-of-week", 0, 7, DOW_NAMES)
YEAR = FieldDef("year", MIN_YEAR, MAX_YEAR)

_ITEM = re.compile(r"(?:(?P<star>\*)|(?P<start>[0-9A-Za-z]+)(?:-(?P<end>[0-9A-Za-z]+))?)(?:/(?P<step>[0-9A-Za-z]*))?")
_LAST_OR_WEEKDAY = re.compile(r"\d*L(?:W)?|L-\d+|\d+W", re.IGNORECASE)


@dataclass(frozen=True)
class CronFields:
    """A parsed cron expression: the set of matching values of every field.

    ``dom_star``/``dow_star`` record whether the day fields were written as a bare ``*``: the
    day-of-month/day-of-week rule depends on how they were written, not only on their values.
    """

    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    years: frozenset[int] | None
    dom_star: bool
    dow_star: bool
    #: The hour field was written starting with ``*`` (``*``, ``*/2``): Vixie cron's "wildcard"
    #: job, which follows the clock across DST changes (see docs/triggers.md).
    hour_star: bool = False

    @property
    def every_hour(self) -> bool:
        """True when the schedule follows the clock across DST changes: its hour field starts
        with ``*`` (Vixie cron's rule, whatever the values; decides the DST rule, see docs)."""
        return self.hour_star


def _unsupported(item: str, field: FieldDef) -> TriggerError | None:
    """An error for the Quartz-style extensions we deliberately do not implement, else None."""
    if "?" in item:
        return TriggerError(f"{field.name} field: '?' is not supported; use '*'")
    if "#" in item:
        return TriggerError(f"{field.name} field: '#' (nth weekday of the month) is not supported in {item!r}")
    if field in (DAY_OF_MONTH, DAY_OF_WEEK) and _LAST_OR_WEEKDAY.fullmatch(item):
        what = "'W' (nearest weekday)" if item.upper().endswith("W") else "'L' (last day)"
        return TriggerError(f"{field.name} field: {what} is not supported in {item!r}")
    return None


def _value(token: str, field: FieldDef, item: str) -> int:
    if token.isdigit():
        value = int(token)
    elif field.names is not None and token.upper() in field.names:
        value = field.names[token.upper()]
    else:
        if field.names is None:
            raise TriggerError(f"{field.name} field: {token!r} in {item!r} is not a number")
        choices = ", ".join(field.names)
        raise TriggerError(f"{field.name} field: unknown name {token!r} in {item!r} (expected a number or {choices})")
    if not field.low <= value <= field.high:
        raise TriggerError(f"{field.name} field: {value} in {item!r} is out of range {field.low}-{field.high}")
    return value


def _parse_item(item: str, field: FieldDef) -> set[int]:
    unsupported = _unsupported(item, field)
    if unsupported is not None:
        raise unsupported
    match = _ITEM.fullmatch(item)
    if match is None:
        raise TriggerError(f"{field.name} field: cannot parse {item!r}")
    step_text = match["step"]
    step = 1
    if step_text is not None:
        if not step_text.isdigit():
            raise TriggerError(f"{field.name} field: step {step_text!r} in {item!r} is not a positive integer")
        step = int(step_text)
        span = field.high - field.low + 1
        if not 1 <= step <= span:
            raise TriggerError(f"{field.name} field: step {step} in {item!r} must be between 1 and {span}")
    if match["star"]:
        low, high = field.low, field.high
        if field is DAY_OF_WEEK:
            high = 6  # '*' covers Sunday once, as 0
    else:
        low = _value(match["start"], field, item)
        if match["end"] is not None:
            end = match["end"]
            # 'FRI-SUN' reads naturally; SUN as the end of a range means 7, which is also Sunday.
            high = 7 if field is DAY_OF_WEEK and end.upper() == "SUN" else _value(end, field, item)
            if high < low:
                raise TriggerError(
                    f"{field.name} field: range {item!r} is reversed ({low} > {high}); write it as two ranges"
                )
        elif step_text is not None:
            high = 6 if field is DAY_OF_WEEK else field.high  # 'a/n' means from a to the end of the field
        else:
            high = low
    values = set(range(low, high + 1, step))
    if field is DAY_OF_WEEK and 7 in values:
        values.discard(7)
        values.add(0)
    return values


def parse_field(text: str, field: FieldDef) -> frozenset[int]:
    """Return the set of values ``text`` selects in ``field``.

    :raises TriggerError: naming the field and the offending item
    """
    values: set[int] = set()
    for item in text.split(","):
        if not item:
            raise TriggerError(f"{field.name} field: empty list item in {text!r}")
        values |= _parse_item(item, field)
    return frozenset(values)


def parse(expression: str) -> CronFields:
    """Parse a cron expression (5, 6 or 7 fields, or an ``@`` word).

    :raises TriggerError: if the expression is invalid or uses an unsupported feature
    """
    if not isinstance(expression, str):
        raise TriggerError(f"cron expression must be a string, got {type(expression).__name__}")
    text = expression.strip()
    if text.startswith("@"):
        word = text.lower()
        if word == "@reboot":
            raise TriggerError("'@reboot' is not supported: tickwork fires on time, not on start-up")
        if word not in WORDS:
            raise TriggerError(f"unknown cron word {text!r} (supported: {', '.join(WORDS)})")
        text = WORDS[word]
    parts = text.split()
    if len(parts) == 5:
        parts = ["0", *parts]
    if len(parts) not in (6, 7):
        raise TriggerError(
            f"cron expression {expression!r} has {len(parts)} fields; expected 5 (min hour dom month dow), "
            "6 (sec min hour dom month dow) or 7 (sec min hour dom month dow year)"
        )
    year_text = parts[6] if len(parts) == 7 else "*"
    return CronFields(
        seconds=parse_field(parts[0], SECOND),
        minutes=parse_field(parts[1], MINUTE),
        hours=parse_field(parts[2], HOUR),
        days=parse_field(parts[3], DAY_OF_MONTH),
        months=parse_field(parts[4], MONTH),
        weekdays=parse_field(parts[5], DAY_OF_WEEK),
        years=None if year_text == "*" else parse_field(year_text, YEAR),
        dom_star=parts[3] == "*",
        dow_star=parts[5] == "*",
        hour_star=parts[2].startswith("*"),
    )


def _render_set(values: frozenset[int], low: int, high: int, star: bool, star_step: bool = True) -> str:
    """Render a value set deterministically, so equal sets always give equal text.

    :param star_step: a step from the field's start may be written ``*/n``
    """
    if star:
        return "*"
    ordered = sorted(values)
    if len(ordered) >= 3:
        step = ordered[1] - ordered[0]
        if step > 1 and all(b - a == step for a, b in pairwise(ordered)):
            if star_step and ordered[0] == low and ordered[-1] + step > high:
                return f"*/{step}"
            return f"{ordered[0]}-{ordered[-1]}/{step}"
    parts: list[str] = []
    run_start = previous = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == previous + 1:
            previous = value
            continue
        parts.append(str(run_start) if run_start == previous else f"{run_start}-{previous}")
        if value is not None:
            run_start = previous = value
    return ",".join(parts)


def _render_hours(fields: CronFields) -> str:
    """The hour field, starting with ``*`` exactly when it was written so (the DST rule depends on
    it): ``0-23`` stays ``0-23`` and ``0-22/2`` stays a range, while ``*/2`` stays ``*/2``."""
    hours = fields.hours
    if not fields.hour_star:
        return _render_set(hours, 0, 23, False, star_step=False)
    text = _render_set(hours, 0, 23, len(hours) == 24)
    if text.startswith("*"):
        return text
    # A list led by a star item (`*/5,3`): every star item includes hour 0, which `*/24` says alone.
    rest = hours - {0}
    return "*/24" + (f",{_render_set(rest, 0, 23, False, star_step=False)}" if rest else "")


def render(fields: CronFields) -> str:
    """The canonical text of ``fields``: 6 fields with seconds first, plus the year when restricted.

    Names become numbers, Sunday is 0, lists are sorted and merged into ranges and steps. A day
    field keeps ``*`` only if it was written ``*`` (the day rule depends on it), so a full set in
    that field renders as ``1-31`` / ``0-6``.
    """
    out = [
        _render_set(fields.seconds, 0, 59, len(fields.seconds) == 60),
        _render_set(fields.minutes, 0, 59, len(fields.minutes) == 60),
        _render_hours(fields),
        _render_set(fields.days, 1, 31, fields.dom_star),
        _render_set(fields.months, 1, 12, len(fields.months) == 12),
        _render_set(fields.weekdays, 0, 6, fields.dow_star),
    ]
    if fields.years is not None:
        # A written year field never renders as '*': '*' means any year, not only MIN_YEAR-MAX_YEAR.
        out.append(_render_set(fields.years, MIN_YEAR, MAX_YEAR, False))
    return " ".join(out)
