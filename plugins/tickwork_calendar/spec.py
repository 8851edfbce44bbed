"""The systemd calendar-event grammar: parse, normalize, validate and format.

The rules follow ``systemd.time(7)`` as systemd 252 implements them, including its quirks: a
trailing word is a time zone only if it names a zone file, two-digit years map to 1970..2069,
a range stop is trimmed to a multiple of its repetition, and the normalized text is exactly what
``systemd-analyze calendar`` prints as "Normalized form".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from tickwork.errors import TriggerError

from .zones import zone_name_is_valid

USEC_PER_SEC = 1_000_000
INT_MAX = 2**31 - 1
ULONG_MAX = 2**64 - 1
MIN_YEAR = 1970
MAX_YEAR = 2199
#: systemd refuses chains of more components than this (counted from zero, so 241 are allowed).
COMPONENTS_MAX = 240
ALL_WEEKDAYS = 127

WEEKDAY_ABBREVIATIONS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
# Long names come first so that "Monday" is not read as "Mon" followed by garbage.
_WEEKDAY_WORDS = tuple(
    (word, number)
    for number, long_name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
    for word in (long_name, long_name[:3])
)

# Shorthand words mapped to the fields they pin; every unnamed field stays "*".
_SHORTHANDS: dict[str, dict[str, tuple[int, ...]]] = {
    "minutely": {"second": (0,)},
    "hourly": {"minute": (0,), "second": (0,)},
    "daily": {"hour": (0,), "minute": (0,), "second": (0,)},
    "monthly": {"day": (1,), "hour": (0,), "minute": (0,), "second": (0,)},
    "weekly": {"weekday": (0,), "hour": (0,), "minute": (0,), "second": (0,)},
    "yearly": {"month": (1,), "day": (1,), "hour": (0,), "minute": (0,), "second": (0,)},
    "quarterly": {"month": (1, 4, 7, 10), "day": (1,), "hour": (0,), "minute": (0,), "second": (0,)},
    "semiannually": {"month": (1, 7), "day": (1,), "hour": (0,), "minute": (0,), "second": (0,)},
}
SHORTHAND_ALIASES: dict[str, str] = {
    "minutely": "minutely",
    "hourly": "hourly",
    "daily": "daily",
    "monthly": "monthly",
    "weekly": "weekly",
    "yearly": "yearly",
    "annually": "yearly",
    "anually": "yearly",  # misspelling systemd keeps for backwards compatibility
    "quarterly": "quarterly",
    "semiannually": "semiannually",
    "semi-annually": "semiannually",
    "biannually": "semiannually",
    "bi-annually": "semiannually",
}


@dataclass(frozen=True, order=True)
class Component:
    """One list item of a field: ``start``, optionally ``..stop`` and ``/repeat``.

    ``stop`` is -1 when absent and ``repeat`` 0 when absent. Seconds are stored in microseconds.
    """

    start: int
    stop: int = -1
    repeat: int = 0


Chain = tuple[Component, ...]


@dataclass(frozen=True)
class CalendarSpec:
    """A parsed, normalized and validated calendar event.

    A chain of ``None`` means "*" (any value). ``weekdays`` is a bit set (bit 0 = Monday) or -1 for
    any day; ``end_of_month`` means the day chain counts back from the last day of the month.
    """

    weekdays: int = -1
    year: Chain | None = None
    month: Chain | None = None
    day: Chain | None = None
    hour: Chain | None = None
    minute: Chain | None = None
    second: Chain = (Component(0),)
    end_of_month: bool = False
    utc: bool = False
    timezone: str | None = None
    # The epoch form "@N" is a fixed UTC instant whatever zone follows it.
    epoch: bool = field(default=False, compare=False)

    def format(self) -> str:
        """Return the text ``systemd-analyze calendar`` prints as "Normalized form"."""
        parts: list[str] = []
        if 0 < self.weekdays <= ALL_WEEKDAYS:
            parts.append(_format_weekdays(self.weekdays) + " ")
        parts.append(_format_chain(self.year, 4, usec=False))
        parts.append("-")
        parts.append(_format_chain(self.month, 2, usec=False))
        parts.append("~" if self.end_of_month else "-")
        parts.append(_format_chain(self.day, 2, usec=False))
        parts.append(" ")
        parts.append(_format_chain(self.hour, 2, usec=False))
        parts.append(":")
        parts.append(_format_chain(self.minute, 2, usec=False))
        parts.append(":")
        parts.append(_format_chain(self.second, 2, usec=True))
        if self.utc:
            parts.append(" UTC")
        elif self.timezone is not None:
            parts.append(" " + self.timezone)
        return "".join(parts)


# -- formatting -----------------------------------------------------------------------------------


def _format_weekdays(bits: int) -> str:
    out: list[str] = []
    run_start = -1
    for day in range(8):
        if day < 7 and bits & (1 << day):
            if run_start < 0:
                if out:
                    out.append(",")
                out.append(WEEKDAY_ABBREVIATIONS[day])
                run_start = day
        elif run_start >= 0:
            # A run of three or more days prints as a range, a run of two as a list.
            if day > run_start + 1:
                out.append(".." if day > run_start + 2 else ",")
                out.append(WEEKDAY_ABBREVIATIONS[day - 1])
            run_start = -1
    return "".join(out)


def _format_chain(chain: Chain | None, width: int, *, usec: bool) -> str:
    if chain is None:
        return "*"
    unit = USEC_PER_SEC if usec else 1
    first = chain[0]
    if usec and first.start == 0 and first.stop < 0 and first.repeat == USEC_PER_SEC:
        # Every second matches, so systemd prints "*" and drops any further items ("0/1,5" -> "*").
        return "*"
    items: list[str] = []
    for comp in chain:
        text = f"{comp.start // unit:0{width}d}"
        if comp.start % unit:
            text += f".{comp.start % unit:06d}"
        if comp.stop > 0:
            text += f"..{comp.stop // unit:0{width}d}"
            if comp.stop % unit:
                text += f".{comp.stop % unit:06d}"
        if comp.repeat > 0 and not (comp.stop > 0 and comp.repeat == unit):
            text += f"/{comp.repeat // unit}"
        if comp.repeat % unit:
            text += f".{comp.repeat % unit:06d}"
        items.append(text)
    return ",".join(items)


# -- parsing --------------------------------------------------------------------------------------


class _Invalid(Exception):
    """A parse failure at a position of the text being parsed (turned into a TriggerError)."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def _ascii_lower(text: str) -> str:
    # systemd compares with the C locale: only A-Z fold, never other letters.
    return "".join(chr(ord(ch) + 32) if "A" <= ch <= "Z" else ch for ch in text)


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


class _Parser:
    """Reads one expression left to right the way systemd's calendar_spec_from_string does."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def skip_spaces(self) -> None:
        while self.peek() == " ":
            self.pos += 1

    # weekdays ------------------------------------------------------------------------------------

    def weekdays(self) -> int:
        bits = 0
        range_from = -1
        first = True
        while True:
            lowered = _ascii_lower(self.text[self.pos : self.pos + 9])
            for word, number in _WEEKDAY_WORDS:  # noqa: B007 - the match is used after the loop
                if lowered.startswith(word):
                    break
            else:
                if first:
                    return -1
                raise _Invalid("expected a weekday name", self.pos)
            after = self.peek(len(word))
            if after not in ("", "-", ".", ",", " "):
                raise _Invalid(
                    f"unexpected {after!r} after weekday {self.text[self.pos : self.pos + len(word)]!r}",
                    self.pos + len(word),
                )
            bits |= 1 << number
            if range_from >= 0:
                if range_from > number:
                    raise _Invalid("weekday range runs backwards (weeks start on Monday)", self.pos)
                for between in range(range_from + 1, number):
                    bits |= 1 << between
            self.pos += len(word)
            ch = self.peek()
            if ch == "":
                return bits
            if ch == " ":
                self.skip_spaces()
                return bits
            if ch == ".":
                if range_from >= 0:
                    raise _Invalid("a weekday range cannot be chained", self.pos)
                if self.peek(1) != ".":
                    raise _Invalid("weekday ranges are written 'Mon..Fri'", self.pos)
                range_from = number
                self.pos += 2
            elif ch == "-":
                if range_from >= 0:
                    raise _Invalid("a weekday range cannot be chained", self.pos)
                range_from = number
                self.pos += 1
            elif ch == ",":
                range_from = -1
                self.pos += 1
            if self.peek() in ("", " "):
                self.skip_spaces()
                if range_from >= 0:
                    raise _Invalid("weekday range has no end", self.pos)
                return bits
            first = False

    # numbers -------------------------------------------------------------------------------------

    def decimal(self, *, usec: bool, what: str) -> int:
        start = self.pos
        if not _is_digit(self.peek()):
            found = self.peek() or "end of text"
            raise _Invalid(f"expected a number for the {what}, found {found!r}", start)
        end = start
        while end < len(self.text) and _is_digit(self.text[end]):
            end += 1
        value = int(self.text[start:end])
        if value > ULONG_MAX:
            raise _Invalid(f"number {self.text[start:end]} is too large", start)
        self.pos = end
        if usec:
            if value * USEC_PER_SEC > ULONG_MAX:
                raise _Invalid(f"number {self.text[start:end]} is too large", start)
            value *= USEC_PER_SEC
            # One "." is a decimal point, ".." is a range.
            if self.peek() == "." and self.peek(1) != ".":
                self.pos += 1
                value += self.fraction(start)
        if value > INT_MAX:
            raise _Invalid(f"number {self.text[start : self.pos]} is too large", start)
        return value

    def fraction(self, number_start: int) -> int:
        digits = ""
        while len(digits) < 6 and _is_digit(self.peek()):
            digits += self.peek()
            self.pos += 1
        if not digits:
            raise _Invalid("expected digits after the decimal point", self.pos)
        value = int(digits.ljust(6, "0"))
        # Six digits are kept; the seventh rounds, any further ones are ignored.
        if len(digits) == 6 and "5" <= self.peek() <= "9":
            value += 1
        while _is_digit(self.peek()):
            self.pos += 1
        return value

    def chain(self, *, usec: bool, what: str) -> Chain | None:
        if self.peek() == "*":
            self.pos += 1
            return (Component(0, -1, USEC_PER_SEC),) if usec else None
        items: list[Component] = []
        while True:
            if len(items) > COMPONENTS_MAX:
                raise _Invalid(f"the {what} list has more than {COMPONENTS_MAX + 1} items", self.pos)
            item_start = self.pos
            start = self.decimal(usec=usec, what=what)
            stop = -1
            repeat = 0
            if self.peek() == "." and self.peek(1) == ".":
                self.pos += 2
                stop = self.decimal(usec=usec, what=f"{what} range end")
                repeat = USEC_PER_SEC if usec else 1
            if self.peek() == "/":
                self.pos += 1
                repeat = self.decimal(usec=usec, what=f"{what} repetition")
                if repeat == 0:
                    raise _Invalid(f"the {what} repetition must not be 0", item_start)
            else:
                if start > INT_MAX - repeat:
                    raise _Invalid(f"number in {self.text[item_start : self.pos]!r} is too large", item_start)
                if usec and stop >= 0 and start + repeat > stop:
                    raise _Invalid(
                        f"seconds range {self.text[item_start : self.pos]!r} holds no whole-second step;"
                        " give a repetition such as '/0.5'",
                        item_start,
                    )
            after = self.peek()
            if after not in ("", " ", ",", "-", "~", ":"):
                raise _Invalid(f"unexpected {after!r} in the {what}", self.pos)
            items.append(Component(start, stop, repeat))
            if after != ",":
                return tuple(items)
            self.pos += 1


def _parse_epoch(parser: _Parser) -> int:
    # "@N" is read with strtoul: leading blanks and a sign are allowed, a minus wraps around.
    text = parser.text
    index = parser.pos + 1
    while index < len(text) and text[index] in " \t\n\v\f\r":
        index += 1
    negative = False
    if index < len(text) and text[index] in "+-":
        negative = text[index] == "-"
        index += 1
    digits_start = index
    while index < len(text) and _is_digit(text[index]):
        index += 1
    if index == digits_start:
        raise _Invalid("expected seconds since the epoch after '@'", parser.pos)
    value = int(text[digits_start:index])
    if value > ULONG_MAX:
        raise _Invalid("the epoch timestamp is too large", parser.pos)
    if negative:
        value = -value
    parser.pos = index
    return value


@dataclass
class _Fields:
    weekdays: int = -1
    year: Chain | None = None
    month: Chain | None = None
    day: Chain | None = None
    hour: Chain | None = None
    minute: Chain | None = None
    second: Chain = (Component(0),)
    end_of_month: bool = False
    epoch: bool = False


def _parse_date(parser: _Parser, fields: _Fields) -> bool:
    """Parse the date part if there is one; True when the expression was an "@N" timestamp."""
    if parser.peek() == "":
        return False
    if parser.peek() == "@":
        at = parser.pos
        seconds = _parse_epoch(parser)
        if not 0 <= seconds < 2**63:
            raise _Invalid("the epoch timestamp is before 1970", at)
        if seconds >= 7258118400:  # 2200-01-01: past the last year systemd computes
            raise _Invalid(f"the epoch timestamp is after {MAX_YEAR}", at)
        moment = datetime.fromtimestamp(seconds, UTC)
        fields.year = (Component(moment.year),)
        fields.month = (Component(moment.month),)
        fields.day = (Component(moment.day),)
        fields.hour = (Component(moment.hour),)
        fields.minute = (Component(moment.minute),)
        fields.second = (Component(moment.second * USEC_PER_SEC),)
        fields.epoch = True
        return True
    start = parser.pos
    first = parser.chain(usec=False, what="date")
    if parser.peek() in ("", ":"):
        # That was an hour, not a date: rewind and let the time parser read it.
        parser.pos = start
        return False
    separator = parser.peek()
    if separator == "~":
        fields.end_of_month = True
    elif separator != "-":
        raise _Invalid(f"unexpected {separator!r} in the date", parser.pos)
    parser.pos += 1
    second = parser.chain(usec=False, what="day" if fields.end_of_month else "month or day")
    if parser.peek() in ("", " "):
        parser.skip_spaces()
        fields.month, fields.day = first, second
        return False
    if fields.end_of_month:
        raise _Invalid("'~' may only separate the month from the day", start)
    separator = parser.peek()
    if separator == "~":
        fields.end_of_month = True
    elif separator != "-":
        raise _Invalid(f"unexpected {separator!r} in the date", parser.pos)
    parser.pos += 1
    third = parser.chain(usec=False, what="day")
    if parser.peek() not in ("", " "):
        raise _Invalid(f"unexpected {parser.peek()!r} after the date", parser.pos)
    parser.skip_spaces()
    fields.year, fields.month, fields.day = first, second, third
    return False


def _parse_time(parser: _Parser, fields: _Fields) -> None:
    if parser.peek() == "":
        fields.hour, fields.minute, fields.second = (Component(0),), (Component(0),), (Component(0),)
        return
    fields.hour = parser.chain(usec=False, what="hour")
    if parser.peek() != ":":
        found = parser.peek() or "end of text"
        raise _Invalid(f"expected ':' after the hour, found {found!r}", parser.pos)
    parser.pos += 1
    fields.minute = parser.chain(usec=False, what="minute")
    if parser.peek() == "":
        fields.second = (Component(0),)
        return
    if parser.peek() != ":":
        raise _Invalid(f"unexpected {parser.peek()!r} after the minute", parser.pos)
    parser.pos += 1
    second = parser.chain(usec=True, what="second")
    assert second is not None  # "*" reads as every second, never as None, for the seconds
    fields.second = second
    if parser.peek() != "":
        raise _Invalid(f"unexpected {parser.peek()!r} after the seconds", parser.pos)


def _shorthand(word: str) -> _Fields | None:
    canonical = SHORTHAND_ALIASES.get(_ascii_lower(word))
    if canonical is None:
        return None
    fields = _Fields(second=(Component(0),))
    for name, values in _SHORTHANDS[canonical].items():
        if name == "weekday":
            fields.weekdays = sum(1 << value for value in values)
        elif name == "second":
            fields.second = tuple(Component(v * USEC_PER_SEC) for v in values)
        else:
            setattr(fields, name, tuple(Component(v) for v in values))
    return fields


def _split_zone(text: str) -> tuple[str, bool, str | None]:
    if _ascii_lower(text[-4:]) == " utc":
        return text[:-4], True, None
    last_space = text.rfind(" ")
    if last_space >= 0 and zone_name_is_valid(text[last_space + 1 :]):
        return text[:last_space], False, text[last_space + 1 :]
    return text, False, None


# -- normalization and validation -------------------------------------------------------------------


def _fix_year(value: int) -> int:
    if 0 <= value < 70:
        return value + 2000
    if 70 <= value < 100:
        return value + 1900
    return value


def _normalize_chain(chain: Chain | None, *, years: bool = False) -> Chain | None:
    if chain is None:
        return None
    out: set[Component] = set()
    for comp in chain:
        start, stop, repeat = comp.start, comp.stop, comp.repeat
        if years:
            start = _fix_year(start)
            stop = _fix_year(stop)
        if stop > start and repeat > 0:
            stop -= (stop - start) % repeat
        if (stop > start and repeat > 0 and start + repeat > stop) or start == stop:
            stop, repeat = -1, 0
        out.add(Component(start, stop, repeat))
    return tuple(sorted(out))


def _chain_problem(chain: Chain | None, low: int, high: int, *, end_of_month: bool, unit: int) -> str | None:
    """Return why a chain is invalid for the range ``low..high``, or None when it is valid."""
    if chain is None:
        return None

    def show(value: int) -> str:
        if unit == 1:
            return str(value)
        whole, frac = divmod(value, unit)
        return f"{whole}.{frac:06d}".rstrip("0").rstrip(".") if frac else str(whole)

    for comp in chain:
        if end_of_month:
            # systemd lowers the limit by 3 for every item of the list, not once: the first day
            # counted from the month's end may be ~28, the second ~25, the third ~22 and so on.
            high -= 3
        span = f"{show(low)}..{show(high)}"
        if not low <= comp.start <= high:
            return f"value {show(comp.start)} is outside {span}"
        if comp.repeat > high - low:
            return f"repetition /{show(comp.repeat)} is larger than the range {span}"
        if comp.stop >= 0:
            if not low <= comp.stop <= high:
                return f"range end {show(comp.stop)} is outside {span}"
            if comp.start + comp.repeat > comp.stop:
                return f"range {show(comp.start)}..{show(comp.stop)} does not reach a second value"
        elif end_of_month and comp.start - comp.repeat < low:
            return f"repetition {show(comp.start)}/{show(comp.repeat)} runs past the start of the month"
        elif not end_of_month and comp.start + comp.repeat > high:
            return f"repetition {show(comp.start)}/{show(comp.repeat)} never repeats within {span}"
    return None


def parse(expression: str) -> CalendarSpec:
    """Parse, normalize and validate ``expression``.

    :raises tickwork.errors.TriggerError: naming the offending part when systemd would reject it
    """
    try:
        return _parse(expression)
    except _Invalid as problem:
        where = ""
        if problem.position is not None:
            rest = expression[problem.position :] or "<end>"
            where = f" at position {problem.position + 1} ({rest[:20]!r})"
        raise TriggerError(f"invalid calendar expression {expression!r}: {problem.message}{where}") from None


def _parse(expression: str) -> CalendarSpec:
    if "\0" in expression:
        raise _Invalid("NUL characters are not allowed", expression.index("\0"))
    text, utc, zone = _split_zone(expression)
    if not text:
        raise _Invalid("the expression is empty" if not expression else "nothing before the time zone")
    fields = _shorthand(text)
    if fields is None:
        parser = _Parser(text)
        fields = _Fields()
        fields.weekdays = parser.weekdays()
        if not _parse_date(parser, fields):
            _parse_time(parser, fields)
        if parser.peek() != "":
            raise _Invalid(f"unexpected {parser.peek()!r}", parser.pos)
    if fields.epoch:
        utc = True
    weekdays = fields.weekdays
    if weekdays <= 0 or weekdays >= ALL_WEEKDAYS:
        weekdays = -1
    end_of_month = fields.end_of_month and fields.day is not None
    if zone == "UTC":
        utc, zone = True, None
    second = _normalize_chain(fields.second)
    assert second is not None
    spec = CalendarSpec(
        weekdays=weekdays,
        year=_normalize_chain(fields.year, years=True),
        month=_normalize_chain(fields.month),
        day=_normalize_chain(fields.day),
        hour=_normalize_chain(fields.hour),
        minute=_normalize_chain(fields.minute),
        second=second,
        end_of_month=end_of_month,
        utc=utc,
        timezone=zone,
        epoch=fields.epoch,
    )
    checks = (
        ("year", spec.year, MIN_YEAR, MAX_YEAR, False, 1),
        ("month", spec.month, 1, 12, False, 1),
        ("day", spec.day, 1, 31, spec.end_of_month, 1),
        ("hour", spec.hour, 0, 23, False, 1),
        ("minute", spec.minute, 0, 59, False, 1),
        ("second", spec.second, 0, 60 * USEC_PER_SEC - 1, False, USEC_PER_SEC),
    )
    for name, chain, low, high, eom, unit in checks:
        problem = _chain_problem(chain, low, high, end_of_month=eom, unit=unit)
        if problem is not None:
            label = "day counted from the month's end" if eom else name
            raise _Invalid(f"{label}: {problem}")
    return spec
