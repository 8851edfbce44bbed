"""``localtime`` and ``mktime`` as glibc computes them, for the DST corner of the search.

systemd walks a calendar event field by field and asks ``mktime`` after each step whether the
local time it built exists. Around a DST change the answer depends on glibc details: a time in a
spring-forward gap is moved by the gap's size (forward or *backward*, depending on the offset
``mktime`` used last), and a time that occurs twice resolves to the offset used last. To fire at
exactly the instants systemd fires, :class:`LibcClock` reproduces that probing, including the
remembered offset, on top of :class:`~tickwork_calendar.zones.Zone`.
"""

from __future__ import annotations

from .zones import Zone, civil_from_days, days_from_civil

_DAY = 86400
# glibc's neighbour search for a wanted DST flag: probe stride and reach, in seconds.
_DST_STRIDE = 601200
_DST_REACH = 457243209 // 2 + _DST_STRIDE
_MAX_PROBES = 6

#: Indices into the broken-down time lists used here (a C ``struct tm`` with a full year,
#: 0-based month and a DST flag of -1/0/1).
YEAR, MON, MDAY, HOUR, MIN, SEC, ISDST = range(7)
Tm = list[int]


def wall_seconds(tm: Tm, second: int | None = None) -> int:
    """Seconds since the epoch of ``tm`` read as UTC; every field may be out of range."""
    days = days_from_civil(tm[YEAR], tm[MON] + 1, 1) + tm[MDAY] - 1
    return days * _DAY + tm[HOUR] * 3600 + tm[MIN] * 60 + (tm[SEC] if second is None else second)


def split_wall(wall: int, isdst: int) -> Tm:
    """Break wall-clock seconds since the epoch into a :data:`Tm`."""
    days, rest = divmod(wall, _DAY)
    year, month, day = civil_from_days(days)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    return [year, month - 1, day, hour, minute, second, isdst]


def weekday(tm: Tm) -> int:
    """Day of the week of a normalized ``tm``, 0 = Monday."""
    return (days_from_civil(tm[YEAR], tm[MON] + 1, tm[MDAY]) + 3) % 7


def _dst_differs(a: int, b: int) -> bool:
    return (not a) != (not b) and a >= 0 and b >= 0


class LibcClock:
    """glibc's ``localtime_r``/``mktime`` over one zone, keeping ``mktime``'s remembered offset.

    With ``zone=None`` it behaves as ``gmtime_r``/``timegm`` (no DST, nothing remembered).
    """

    def __init__(self, zone: Zone | None) -> None:
        self.zone = zone
        #: glibc's ``localtime_offset``: result minus wall time of the last ``mktime``.
        self.guess = 0

    def localtime(self, t: int) -> Tm:
        if self.zone is None:
            return split_wall(t, 0)
        offset, dst = self.zone.at(t)
        return split_wall(t + offset, int(dst))

    def mktime(self, tm: Tm) -> int | None:
        """Normalize ``tm`` in place and return its UTC second, or None where glibc fails."""
        wanted_second = tm[SEC]
        if self.zone is None:
            t = wall_seconds(tm)
            tm[:] = split_wall(t, 0)
            return t
        zone = self.zone
        # Leap seconds are possible for glibc: it solves for a clamped second and adds the rest.
        second = min(max(wanted_second, 0), 59)
        wall = wall_seconds(tm, second)
        wanted_dst = tm[ISDST]
        t = t1 = t2 = wall + self.guess
        previous_dst = 0
        probes = _MAX_PROBES
        while True:
            offset, is_dst = zone.at(t)
            dst = int(is_dst)
            miss = wall - (t + offset)
            if miss == 0:
                break
            oscillating = t == t1 and t != t2
            if oscillating and (previous_dst <= dst if wanted_dst < 0 else (wanted_dst != 0) != (dst != 0)):
                # A time inside a spring-forward gap: settle on the current probe.
                return self._settle(tm, t, wall, wanted_second, second)
            probes -= 1
            if probes == 0:
                return None
            t1, t2, t, previous_dst = t2, t, t + miss, dst
        if _dst_differs(wanted_dst, dst):
            # The time exists but with the other DST flag: borrow the offset of a neighbour.
            for delta in range(_DST_STRIDE, _DST_REACH, _DST_STRIDE):
                for direction in (-1, 1):
                    other = t + delta * direction
                    other_offset, other_dst = zone.at(other)
                    if not _dst_differs(wanted_dst, int(other_dst)):
                        return self._settle(tm, other + wall - (other + other_offset), wall, wanted_second, second)
            # No neighbour with that flag: glibc assumes the flags differ by one hour.
            return self._settle(tm, t + 3600 * ((wanted_dst == 0) - (dst == 0)), wall, wanted_second, second)
        return self._settle(tm, t, wall, wanted_second, second)

    def _settle(self, tm: Tm, t: int, wall: int, wanted_second: int, second: int) -> int:
        self.guess = t - wall
        result = self.localtime(t)
        if wanted_second != result[SEC]:
            t += wanted_second - second
            result = self.localtime(t)
        tm[:] = result
        return t
