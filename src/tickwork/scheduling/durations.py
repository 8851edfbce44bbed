"""Reading durations, the one syntax wherever tickwork reads one: a schedule's ``timeout`` and
``retry_backoff`` (decorators, :meth:`tickwork.Admin.add`, ``tickwork jobs add``, schedule files),
the ``interval`` trigger's expression, ``tickwork run --for`` and the ages of ``history --since``.

Two spellings: a number of seconds (``90``, ``12.5``; from Python, TOML or JSON a number or a
:class:`~datetime.timedelta`), or ``<n><unit>`` parts, units ``w d h m s`` each at most once and
largest first (``90s``, ``5m``, ``1h30m``, ``2d``).
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

from ..errors import ConfigError

#: Unit letters, largest first, with their length in seconds.
UNITS: dict[str, int] = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}

#: A cheap test of the parts syntax in whole numbers (the ``interval`` trigger's ``recognizes``).
DURATION_PATTERN = r"(?:\d+\s*[wdhmsWDHMS]\s*)+"

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")
# A number of seconds as text: what float() reads, but not "nan", "inf" or "1_0".
_SECONDS = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


class DurationError(ValueError):
    """Text that is not a duration; the message names the offending part (no field name)."""


def parse_duration(text: str) -> timedelta:
    """Parse ``<n><unit>`` parts (``90s``, ``1h30m``); ``n`` may have decimals (``1.5h``). Zero
    is a duration: whether it is allowed is the reader's rule.

    :raises DurationError: naming the offending part (unknown unit, out of order, ...)
    """
    stripped = text.strip()
    if not stripped:
        raise DurationError("the duration is empty; expected something like '90s', '5m' or '1h30m'")
    seconds = 0.0
    position = 0
    previous_rank = -1
    ranks = list(UNITS)
    while position < len(stripped):
        match = _PART.match(stripped, position)
        if match is None:
            raise DurationError(
                f"cannot parse {stripped[position:]!r} in {stripped!r}; "
                "expected parts like '90s', '5m', '1h30m' (units w, d, h, m, s)"
            )
        if len(match[1]) > 15:  # beyond any timedelta; int() itself refuses 4,300+ digits
            raise DurationError(f"the number in {match[0].strip()[:40]!r} is too long")
        unit = match[2].lower()
        if unit not in UNITS:
            raise DurationError(f"unknown unit {match[2]!r} in {match[0].strip()!r} (use w, d, h, m or s)")
        rank = ranks.index(unit)
        if rank <= previous_rank:
            raise DurationError(
                f"unit {unit!r} in {stripped!r} repeats or comes after a smaller unit; write e.g. '1h30m'"
            )
        previous_rank = rank
        seconds += float(match[1]) * UNITS[unit]
        position = match.end()
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise DurationError(f"the duration {stripped!r} is too long") from None


def format_duration(duration: timedelta) -> str:
    """The canonical text of a whole-second duration, largest units first (``5400s`` -> ``1h30m``)."""
    remaining = int(duration.total_seconds())
    parts: list[str] = []
    for unit, size in UNITS.items():
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def seconds_in(text: str) -> float:
    """The seconds that ``text`` gives: a number of seconds (``12.5``; also ``-1`` or ``inf``,
    whose range the reader checks) or ``<n><unit>`` parts (``90s``, ``1h30m``).

    :raises DurationError: if it is neither
    """
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_duration(text).total_seconds()
    except DurationError as exc:
        raise DurationError(_not_a_duration(text, exc)) from None


def _not_a_duration(text: str, exc: DurationError) -> str:
    # The parser's detail helps with something that looks like parts ("5x", "30m1h"), not with "abc".
    detail = f" ({exc})" if any(c.isdigit() for c in text) else ""
    return f"not a number of seconds or a duration like '90s', '5m', '1h30m': {text!r}{detail}"


def duration(where: str, value: object) -> timedelta:
    """A duration given as a :class:`~datetime.timedelta`, a number of seconds, or text (see the
    module); what is not one is refused here, with the field's name (``timedelta`` itself says
    ``unsupported type for timedelta seconds component: str``). The reader checks the range.

    :raises tickwork.errors.ConfigError: naming ``where``
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, str):
        if _SECONDS.fullmatch(value.strip()):
            return duration(where, float(value))
        try:
            return parse_duration(value)
        except DurationError as exc:
            detail = f" ({exc})" if any(c.isdigit() for c in value) else ""
            raise ConfigError(
                f"{where}: expected a finite number of seconds or a duration like '90s', '5m', '1h30m', "
                f"got str {value!r}{detail}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where}: expected a finite number of seconds, got {type(value).__name__} {value!r}")
    try:
        return timedelta(seconds=value)
    except OverflowError:
        raise ConfigError(f"{where}: {value!r} seconds is out of range") from None
