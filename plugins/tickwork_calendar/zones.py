"""Time zones read from the system's TZif files, answering offsets the way glibc does.

systemd evaluates calendar events with glibc's ``localtime``/``mktime``, which read the same
``/usr/share/zoneinfo`` files and extend them past their last transition with the POSIX rule at
the file's end (computed per UTC year, exactly as glibc's ``__tz_compute`` does). A :class:`Zone`
flattens both into one sorted list of segments up to year 2201, so a lookup is one bisection.
"""

from __future__ import annotations

import os
import re
import struct
import zoneinfo
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from tickwork.errors import TriggerError

#: Segments are precomputed up to the start of this year (the search stops after 2199).
HORIZON_YEAR = 2202
_DAY = 86400
_VALID_NAME = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*")


def _find_zone_file(name: str) -> bytes | None:
    for directory in zoneinfo.TZPATH:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                return handle.read()
    try:
        package, _, leaf = f"tzdata.zoneinfo/{name}".rpartition("/")
        return resources.files(package.replace("/", ".")).joinpath(leaf).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError, IsADirectoryError, NotADirectoryError, OSError, ValueError):
        return None


@lru_cache(maxsize=512)
def zone_name_is_valid(name: str) -> bool:
    """Tell whether systemd would accept ``name`` as a time zone (a readable TZif file)."""
    if name == "UTC":
        return True
    if not name or len(name) >= 4096 or not _VALID_NAME.fullmatch(name):
        return False
    data = _find_zone_file(name)
    return data is not None and data[:4] == b"TZif"


# -- POSIX TZ rules (the TZif footer) ---------------------------------------------------------------

_CUMULATIVE_DAYS = (
    (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365),
    (0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366),
)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (month and day may overflow)."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468 + day - 1


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The (year, month, day) of a day count since 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


@dataclass(frozen=True)
class _Rule:
    kind: str  # "J" (1..365, no leap day), "D" (0..365) or "M" (month.week.weekday)
    a: int
    b: int = 0
    c: int = 0
    secs: int = 7200

    def change(self, year: int, gmtoff: int) -> int:
        """The UTC instant this rule fires in ``year``, given the offset in force before it."""
        # glibc starts from 1970-01-01 for any year up to 1970.
        t = days_from_civil(year, 1, 1) * _DAY if year > 1970 else 0
        if self.kind == "J":
            t += (self.a - 1) * _DAY
            if self.a >= 60 and _is_leap(year):
                t += _DAY
        elif self.kind == "D":
            t += self.a * _DAY
        else:
            month, week, weekday = self.a, self.b, self.c
            table = _CUMULATIVE_DAYS[_is_leap(year)]
            t += table[month - 1] * _DAY
            first = (days_from_civil(year, month, 1) + 4) % 7  # 0 = Sunday
            day = (weekday - first) % 7
            length = table[month] - table[month - 1]
            for _ in range(1, week):
                if day + 7 >= length:
                    break
                day += 7
            t += day * _DAY
        return t - gmtoff + self.secs


@dataclass(frozen=True)
class _PosixTZ:
    std_offset: int  # seconds east of UTC
    dst_offset: int | None = None
    start: _Rule | None = None
    end: _Rule | None = None

    def at(self, t: int) -> tuple[int, bool]:
        if self.dst_offset is None or self.start is None or self.end is None:
            return self.std_offset, False
        year = civil_from_days(t // _DAY)[0]
        begin = self.start.change(year, self.std_offset)
        finish = self.end.change(year, self.dst_offset)
        if begin > finish:  # southern hemisphere: daylight time spans the new year
            dst = t < finish or t >= begin
        else:
            dst = begin <= t < finish
        return (self.dst_offset, True) if dst else (self.std_offset, False)

    def candidate_instants(self, year: int) -> list[int]:
        """Instants in ``year`` where :meth:`at` may change its answer."""
        points = [days_from_civil(year, 1, 1) * _DAY]
        if self.dst_offset is not None and self.start is not None and self.end is not None:
            points.append(self.start.change(year, self.std_offset))
            points.append(self.end.change(year, self.dst_offset))
        return sorted(points)


_NAME = r"(?:[A-Za-z]{3,}|<[A-Za-z0-9+\-]+>)"
_OFFSET = r"[+-]?\d{1,3}(?::\d{1,2}(?::\d{1,2})?)?"
_RULE = r"(?:J\d{1,3}|\d{1,3}|M\d{1,2}\.\d\.\d)(?:/[+-]?\d{1,3}(?::\d{1,2}(?::\d{1,2})?)?)?"
_POSIX = re.compile(
    rf"(?P<std>{_NAME})(?P<stdoff>{_OFFSET})"
    rf"(?:(?P<dst>{_NAME})(?P<dstoff>{_OFFSET})?(?:,(?P<start>{_RULE}),(?P<end>{_RULE}))?)?"
)


def _hms(text: str, max_hours: int) -> int:
    sign = -1 if text.startswith("-") else 1
    parts = [int(p) for p in text.lstrip("+-").split(":")] + [0, 0]
    return sign * (min(parts[0], max_hours) * 3600 + min(parts[1], 59) * 60 + min(parts[2], 59))


def _parse_rule(text: str) -> _Rule:
    body, _, time_text = text.partition("/")
    secs = _hms(time_text, 167) if time_text else 7200
    if body.startswith("J"):
        return _Rule("J", int(body[1:]), secs=secs)
    if body.startswith("M"):
        month, week, weekday = (int(p) for p in body[1:].split("."))
        return _Rule("M", month, week, weekday, secs=secs)
    return _Rule("D", int(body), secs=secs)


def _parse_posix(text: str) -> _PosixTZ | None:
    match = _POSIX.fullmatch(text)
    if match is None:
        return None
    std = -_hms(match["stdoff"], 24)
    if match["dst"] is None:
        return _PosixTZ(std)
    dst = -_hms(match["dstoff"], 24) if match["dstoff"] else std + 3600
    if match["start"] is None:
        # glibc's fallback when daylight time has no rules: the US rules.
        return _PosixTZ(std, dst, _Rule("M", 3, 2, 0), _Rule("M", 11, 1, 0))
    return _PosixTZ(std, dst, _parse_rule(match["start"]), _parse_rule(match["end"]))


# -- TZif -----------------------------------------------------------------------------------------


def _parse_tzif(name: str, data: bytes) -> tuple[list[int], list[tuple[int, bool]], tuple[int, bool], _PosixTZ | None]:
    def header(offset: int) -> tuple[int, int, int, int, int, int, str]:
        if data[offset : offset + 4] != b"TZif":
            raise TriggerError(f"time zone {name!r}: not a TZif file")
        version = data[offset + 4 : offset + 5].decode("ascii", "replace")
        counts = struct.unpack(">6l", data[offset + 20 : offset + 44])
        return (*counts, version)

    isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt, version = header(0)
    offset = 44
    time_size = 4
    if version >= "2":
        offset += timecnt * 5 + typecnt * 6 + charcnt + leapcnt * 8 + isstdcnt + isutcnt
        isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt, _ = header(offset)
        offset += 44
        time_size = 8
    if leapcnt:
        raise TriggerError(f"time zone {name!r} counts leap seconds, which systemd timers ignore; use a zone without")
    fmt = f">{timecnt}{'q' if time_size == 8 else 'l'}"
    times = list(struct.unpack(fmt, data[offset : offset + timecnt * time_size]))
    offset += timecnt * time_size
    indices = list(data[offset : offset + timecnt])
    offset += timecnt
    types: list[tuple[int, bool]] = []
    for _ in range(typecnt):
        utoff, isdst, _abbr = struct.unpack(">lBB", data[offset : offset + 6])
        types.append((utoff, bool(isdst)))
        offset += 6
    offset += charcnt + leapcnt * (time_size + 4) + isstdcnt + isutcnt
    footer = None
    if version >= "2":
        text = data[offset:].strip(b"\n").split(b"\n")[0].decode("ascii", "replace")
        footer = _parse_posix(text) if text else None
    # Before the first transition glibc uses the first standard-time type.
    initial = next((entry for entry in types if not entry[1]), types[0] if types else (0, False))
    return times, [types[i] for i in indices], initial, footer


class Zone:
    """UTC offsets of one zone as glibc computes them, flattened into sorted segments.

    :param name: IANA name, ``"UTC"`` for plain UTC
    :raises tickwork.errors.TriggerError: if the zone cannot be read
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._starts: list[int] = []
        self._values: list[tuple[int, bool]] = []
        self._initial: tuple[int, bool] = (0, False)
        self._footer: _PosixTZ | None = None
        self._horizon = days_from_civil(HORIZON_YEAR + 1, 1, 1) * _DAY
        if name != "UTC":
            data = _find_zone_file(name)
            if data is None or not zone_name_is_valid(name):
                raise TriggerError(f"unknown time zone {name!r}")
            self._build(*_parse_tzif(name, data))
        # Instants where the UTC offset itself changes (not just the abbreviation or DST flag).
        self._changes: list[int] = []
        previous = self._initial[0]
        for start, (utoff, _dst) in zip(self._starts, self._values, strict=True):
            if utoff != previous:
                self._changes.append(start)
                previous = utoff

    def _build(
        self, times: list[int], values: list[tuple[int, bool]], initial: tuple[int, bool], footer: _PosixTZ | None
    ) -> None:
        self._initial = initial
        self._footer = footer
        segments: list[tuple[int, tuple[int, bool]]] = list(zip(times, values, strict=True))
        if not times:
            # glibc ignores the footer of a file without transitions.
            footer = None
            self._footer = None
        if footer is not None:
            last = times[-1]
            segments.pop()
            segments.append((last, footer.at(last)))
            for year in range(civil_from_days(last // _DAY)[0], HORIZON_YEAR + 1):
                for point in footer.candidate_instants(year):
                    if point > last:
                        segments.append((point, footer.at(point)))
            segments.sort(key=lambda item: item[0])
        for start, value in segments:
            if self._starts and self._starts[-1] == start:
                self._values[-1] = value
            elif not self._values or self._values[-1] != value:
                self._starts.append(start)
                self._values.append(value)

    def at(self, t: int) -> tuple[int, bool]:
        """Return ``(utc_offset_seconds, is_dst)`` in force at UTC second ``t``."""
        index = bisect_right(self._starts, t) - 1
        if index < 0:
            return self._initial
        if t >= self._horizon and self._footer is not None:
            return self._footer.at(t)
        return self._values[index]

    def offset(self, t: int) -> int:
        """Return the UTC offset in seconds at UTC second ``t``."""
        return self.at(t)[0]

    def previous_change(self, t: int) -> int | None:
        """Return the last instant at or before UTC second ``t`` at which the offset changed, if any."""
        index = bisect_right(self._changes, t) - 1
        return self._changes[index] if index >= 0 else None

    def next_change(self, t: int) -> int | None:
        """Return the first instant after UTC second ``t`` at which the offset changes, if any."""
        index = bisect_right(self._changes, t)
        if index < len(self._changes):
            return self._changes[index]
        if self._footer is not None and self._footer.dst_offset is not None:
            # Past the precomputed horizon the rule keeps switching; the caller never looks that far.
            return t + 1
        return None


@lru_cache(maxsize=256)
def load_zone(name: str) -> Zone:
    """Return the (cached) :class:`Zone` called ``name``.

    :raises tickwork.errors.TriggerError: if the zone is unknown or unreadable
    """
    return Zone(name)
