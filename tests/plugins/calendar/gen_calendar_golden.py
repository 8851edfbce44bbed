"""Regenerate ``tests/plugins/calendar/data/calendar_golden.json`` from the installed systemd.

Usage (on a machine with systemd 252, e.g. Debian 12)::

    /work/venv/bin/python tests/plugins/calendar/gen_calendar_golden.py

For every case it runs ``systemd-analyze calendar --iterations=N --base-time=B EXPR`` with a fixed
``TZ`` and records the normalized form and the elapses (or that systemd rejected the expression).
``systemd-analyze`` prints whole seconds only, so when systemd's shared library is present the
elapses are also computed through it (``calendar_spec_next_usec``, the function behind
``systemd-analyze``) to get microseconds; the two are checked against each other before anything
is written. The tests compare ``CalendarTrigger`` with the committed JSON, so CI needs no systemd.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("data") / "calendar_golden.json"
ITERATIONS = 8
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LIBRARY = "/usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-252.so"

# Bases, as UTC instants (seconds since the epoch may carry a fraction).
BASE_NEW_YEAR = "2026-01-01 00:00:00"
BASE_MID_YEAR = "2026-06-15 13:37:42"
BASE_LEAP = "2028-02-27 23:59:59"
BASE_FAR = "2199-11-30 12:00:00"
BASE_FRACTION = "2026-05-05 05:05:05.123456"
DEFAULT_BASES = (BASE_NEW_YEAR, BASE_MID_YEAR, BASE_LEAP)

# -- the cases -------------------------------------------------------------------------------------

# From systemd's own src/test/test-calendarspec.c (inputs; the outputs come from running systemd).
SYSTEMD_TESTS = [
    "Sat,Thu,Mon-Wed,Sat-Sun",
    "Sat,Thu,Mon..Wed,Sat..Sun",
    "Mon,Sun 12-*-* 2,1:23",
    "Wed *-1",
    "Wed-Wed,Wed *-1",
    "Wed..Wed,Wed *-1",
    "Wed, 17:48",
    "Wednesday,",
    "Wed-Sat,Tue 12-10-15 1:2:3",
    "Wed..Sat,Tue 12-10-15 1:2:3",
    "*-*-7 0:0:0",
    "10-15",
    "monday *-12-* 17:00",
    "Mon,Fri *-*-3,1,2 *:30:45",
    "12,14,13,12:20,10,30",
    "mon,fri *-1/2-1,3 *:30:45",
    "03-05 08:05:40",
    "08:05:40",
    "05:40",
    "Sat,Sun 12-05 08:05:40",
    "Sat,Sun 08:05:40",
    "2003-03-05 05:40",
    "2003-03-05",
    "03-05",
    "hourly",
    "daily",
    "monthly",
    "weekly",
    "minutely",
    "quarterly",
    "semi-annually",
    "annually",
    "*:2/3",
    "2015-10-25 01:00:00 uTc",
    "2015-10-25 01:00:00 Asia/Vladivostok",
    "weekly Pacific/Auckland",
    "2016-03-27 03:17:00.4200005",
    "2016-03-27 03:17:00/0.42",
    "9..11,13:00,30",
    "1..3-1..3 1..3:1..3",
    "00:00:1.125..2.125",
    "00:00:1.0..3.8",
    "00:00:01..03",
    "00:00:01/2,02..03",
    "*-*~1 Utc",
    "*-*~05,3 ",
    "*-*~* 00:00:00",
    "Monday",
    "Monday *-*-*",
    "*-*-*",
    "*:*:*",
    "*:*",
    "12:*",
    "*:30",
    "93..00-*-*",
    "00..07-*-*",
    "*:20..39/5",
    "00:00:20..40/1",
    "*~03/1,03..05",
    "@1493187147",
    "@1493187147 UTC",
    "@0",
    "@0 UTC",
    "*:05..05",
    "*:05..10/6",
    "2016-03-27 03:17:00",
    "2016-03-27 03:17:00 UTC",
    "2016-03-27 03:17:00.420000001 UTC",
    "2016-03-27 03:17:00.4200005 UTC",
    "2015-11-13 09:11:23.42",
    "2015-11-13 09:11:23.42/1.77",
    "Sun 16:00:00",
    "*-04-31",
    "2016-02~01 UTC",
    "Mon 2017-05~01..07 UTC",
    "Mon 2017-05~07/1 UTC",
    "*-*-01/5 04:00:00 UTC",
    "*-01/7-01 04:00:00 UTC",
    "2017-08-06 9,11,13,15,17:00 UTC",
    "2017-08-06 9..17/2:00 UTC",
    "2016-12-* 3..21/6:00 UTC",
    "2017-09-24 03:30:00 Pacific/Auckland",
    "2017-09-24 02:30:00 Pacific/Auckland",
    "2017-04-02 02:30:00 Pacific/Auckland",
    "2017-04-02 03:30:00 Pacific/Auckland",
    "2017-09-09 20:42:00 Pacific/Auckland",
    "Sun *-*-* 01:00:00 Europe/Dublin",
]
SYSTEMD_REJECTED = [
    "test",
    " utc",
    "    ",
    "",
    "7",
    "121212:1:2",
    "2000-03-05.23 00:00:00",
    "2000-03-05 00:00.1:00",
    "00:00:00/0.00000001",
    "00:00:00.0..00.9",
    "2016~11-22",
    "*-*~5/5",
    "Monday.. 12:00",
    "Monday..",
    "-00:+00/-5",
    "00:+00/-5",
    "2016- 11- 24 12: 30: 00",
    "*~29",
    "*~16..31",
    "12..1/2-*",
    "20/4:00",
    "00:00/60",
    "00:00:2300",
    "00:00:18446744073709551615",
    "@88588582097858858",
]
SHORTHANDS = [
    "minutely",
    "hourly",
    "daily",
    "monthly",
    "weekly",
    "yearly",
    "annually",
    "anually",
    "quarterly",
    "semiannually",
    "semi-annually",
    "biannually",
    "bi-annually",
    "DAILY",
    "Hourly",
    "weekly UTC",
    "monthly Europe/Berlin",
    "yearly America/New_York",
    "quarterly Asia/Tokyo",
    "minutely Australia/Lord_Howe",
]
MONTH_ENDS = [
    "*-*~01",
    "*-*~02",
    "*-*~03 12:00",
    "*-*~28",
    "*-02~01",
    "*-02~03",
    "*-*~07/1",
    "*-*~01..07",
    "Mon *-05~07/1",
    "Fri *-*~01..07 17:00",
    "*-*~1,2",
    "*-*~01,05,09",
    "*-*~01..10/3",
    "*-*~03/1,03..05",
    "2024-02~01",
    "*-*~01 23:59:59",
    "*-12~01 23:59:59.5",
    "*-*-28..31",
    "*-*-31",
    "*-*-30,31",
    "*-*~15/5",
    "Sun *-*~01..07 03:00",
]
LEAP = [
    "*-02-29",
    "*-02-29 12:00",
    "2024..2040-02-29",
    "Mon *-02-29",
    "Sat *-02-29 00:00",
    "*-02-28..29",
    "2100-02-29",
    "2096,2100,2104-02-29",
    "*-02~01",
    "2000-02-29",
]
IMPOSSIBLE = [
    "*-02-30",
    "*-02-31",
    "*-04-31",
    "*-06-31 12:00",
    "*-09,11-31",
    "2030-02-29",
    "2025-01-01",
    "Mon 2026-01-01",
    "@0",
    "Mon..Fri 2199-12-31 23:59:59",
    "*-02-30 Europe/Berlin",
    "1970-01-01",
]
FRACTIONS = [
    "*:*:0/0.25",
    "*:*:1.5",
    "*:*:0/25.3",
    "00:00:1.125..2.125",
    "*:*:59.999999",
    "*:*:0.0000005",
    "*:*:10.5,20.25",
    "*:*:0/7.5",
    "*:0/10:0/12.5",
    "*-*-* 12:00:00.5",
    "*:*:30..31/0.25",
    "*:*:00..59/1.5",
    "*:*:0.1/0.1",
    "*:*:0/1,5",
    "*:*:0..59",
    "*:*:00..30",
    "*:*:33.3333333",
]
WEEKDAYS = [
    "Mon *-*-1..7",
    "Fri *-*-13",
    "Sat,Sun *-12-*",
    "Mon..Fri 2030-*-* 08:00",
    "Sun 2026-*-* 00:00",
    "Tue,Thu *-*-* 09,17:30",
    "Wed..Fri *-06-01..10",
    "sat..sun",
    "Mon-Wed,Fri 12:00",
    "Thu 2026-01-01",
    "Sat *-*-1..7 18:00:00",
    "Mon,Tue,Wed,Thu,Fri,Sat,Sun 06:00",
    "MONDAY,friday",
    "Sun *-*-29..31 23:00",
]
OVERFLOWS = [
    "*:0/25",
    "*-*-1/20",
    "*-*-* 0/5:00",
    "*-1/5-01",
    "*-*-* *:*:0/25",
    "*-*-1/10",
    "*-*-* 20/1:00",
    "*-*-* 0/7:0/7:0/7",
    "2020/3-*-* 00:00",
    "1970/13-01-01",
    "*-*-1/15 12:00",
    "*-*-2/30",
]
REPETITIONS = [
    "*:0/15",
    "*-*-* 8..18/2:00",
    "*-1..12/3-1 00:00",
    "*-*-* *:10..50/10:00",
    "2026..2030/2-06-15",
    "*-*-1..31/7 06:00",
    "*-*-* 12:00/30",
    "*-*-* 0..23/6:00:00",
    "*:5/10",
    "*:*:5/10",
    "*-*-* 1,3,5,7,9,11,13,15,17,19,21,23:00",
]
PLAIN = [
    "*-*-* *:*:00",
    "Mon..Fri 09:00",
    "*-*-01 00:00:00",
    "*-*-* 00:00:00",
    "12:00",
    "*-01-01",
    "2026-07-04 12:00",
    "2027-12-31 23:59:59",
    "*-*-* 23:59",
    "00:00",
    "*:*",
    "06:30 UTC",
    "Mon 12:00 utc",
    "2026-*-* 00:00 UTC",
    "Mon  12:00",
    "2026-01-01  ",
    "*-*-* 09:00 Etc/GMT-14",
    "*-*-* 09:00 Etc/GMT+12",
    "daily Asia/Kolkata",
    "*-*-* 09:00 Asia/Kathmandu",
    "*-*-* 09:00 Etc/UTC",
    "*-*-* 09:00 GMT",
    "2199-12-31 23:59:59",
    "*-*-* 09:00 posix/Europe/Berlin",
]
REJECTED = [
    "*/5 * * * *",
    "0 0 12 * * MON",
    "Mon..",
    "Mon..Sun..Tue",
    "Sun..Mon",
    "Mon.Tue",
    "Mon,,Tue",
    "Mond",
    "Monday12:00",
    "25:00",
    "12:60",
    "12:00:60",
    "*-13-01",
    "*-00-01",
    "*-*-32",
    "*-*-00",
    "1969-01-01",
    "2200-01-01",
    "*-*-* 12",
    "12:00:00:00",
    "*-*-*-*",
    "2016~11~22",
    "*~05-01",
    "*-*~0",
    "*:0/0",
    "*:*:1.",
    "*:*:.5",
    "1..",
    "..5:00",
    "*:*:0/0.0000001",
    "12:00 Europe/Nowhere",
    "12:00 Europe//Berlin",
    "12:00 /UTC",
    "12:00 Europe/Berlin extra",
    "*/2:00",
    "**:00",
    "12:00:00.5.5",
    "+1:00",
    "1:00+",
    "12:00\t",
    "@",
    "@-1",
    "@x",
    "@7258118400",
    "@123 12:00",
    "12:00 @123",
    "daily daily",
    "hourly 12:00",
    "fortnightly",
    "00:00:1.5..2",
    "*-*~29",
    "*-*~14,28",
    "*-*~18,27",
    "*-*-5..1",
    "*-*-* 10..5:00",
    "*:*:30..10",
    "2025-02-30x",
    "Mon,12:00",
    "*-*-* *:*:*:*",
    "0x10:00",
    "\uff11\uff12:00",  # full-width digits
]
DST_EXPRESSIONS = [
    "*-*-* 02:30",
    "*-*-* *:30",
    "*-*-* 01:30",
    "*:0/15",
    "*-*-* 00:00",
    "*-*-* 03:00",
    "*-*-* 02:00:00",
    "*-*-* *:*:00",
    "Sun *-*-* 01:00:00",
    "*-*~01 02:30",
    "*-*-1/20 00..03:30:30",
    "*-*-* 0..4:15:0/20",
    "*-*-* 23:30",
    "*-*-* 01:59:59.5",
]
DST_ZONES: dict[str, tuple[str, ...]] = {
    # zone: (a base just before spring-forward, a base just before fall-back), UTC
    "Europe/Berlin": ("2026-03-28 12:00:00", "2026-10-24 12:00:00"),
    "America/New_York": ("2026-03-07 12:00:00", "2026-10-31 12:00:00"),
    "Europe/Dublin": ("2026-03-28 12:00:00", "2026-10-24 12:00:00"),
    "Australia/Lord_Howe": ("2026-10-03 00:00:00", "2026-04-04 00:00:00"),
    "Pacific/Auckland": ("2026-09-26 00:00:00", "2026-04-04 00:00:00"),
    "America/Santiago": ("2026-09-05 00:00:00", "2026-04-04 00:00:00"),
    "America/St_Johns": ("2026-03-07 12:00:00", "2026-10-31 12:00:00"),
    "America/Havana": ("2026-03-07 12:00:00", "2026-10-31 12:00:00"),
    "Pacific/Chatham": ("2026-09-26 00:00:00", "2026-04-04 00:00:00"),
    "Europe/London": ("2026-03-28 12:00:00", "2026-10-24 12:00:00"),
    "Asia/Beirut": ("2026-03-28 12:00:00", "2026-10-24 12:00:00"),
    "Africa/Casablanca": ("2026-02-14 12:00:00", "2026-03-21 12:00:00"),
}
LOCAL_ZONE_EXPRESSIONS = [
    "*-*-* 02:30",
    "*-*-* *:30",
    "*-*-* 01:30",
    "daily",
    "hourly",
    "Mon..Fri 09:00",
    "*-*~01 02:30",
    "*-*-* 00:00:00",
    "*:0/15",
    "Sun *-*-* 01:00:00",
    "2026-11-01 01:30",
    "*-*-1/20 02:30",
]
LOCAL_ZONES: dict[str, tuple[str, ...]] = {
    "America/New_York": ("2026-03-07 12:00:00", "2026-10-31 12:00:00", BASE_NEW_YEAR),
    "Europe/Berlin": ("2026-03-28 12:00:00", "2026-10-24 12:00:00", BASE_NEW_YEAR),
}
RANDOM_CASES = 180


@dataclass(frozen=True)
class Case:
    expression: str
    tz: str
    bases: tuple[str, ...]
    group: str


def random_expression(rng: random.Random) -> str:
    """A valid-looking expression built from the grammar's pieces (systemd decides validity)."""

    def chain(low: int, high: int, *, seconds: bool = False) -> str:
        if rng.random() < 0.3:
            return "*"
        items = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            value = str(rng.randint(low, high))
            if seconds and rng.random() < 0.2:
                value += f".{rng.randint(0, 999):03d}"
            if rng.random() < 0.25:
                value += f"..{rng.randint(low, high)}"
            if rng.random() < 0.3:
                value += f"/{rng.randint(1, max(1, (high - low) // 2))}"
            items.append(value)
        return ",".join(items)

    parts = []
    if rng.random() < 0.3:
        days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        first = rng.randrange(7)
        parts.append(days[first] + (f"..{days[rng.randrange(first, 7)]}" if rng.random() < 0.5 else ""))
    if rng.random() < 0.6:
        separator = "~" if rng.random() < 0.2 else "-"
        year = chain(2025, 2040) + "-" if rng.random() < 0.4 else ""
        parts.append(f"{year}{chain(1, 12)}{separator}{chain(1, 31 if separator == '-' else 10)}")
    time_part = f"{chain(0, 23)}:{chain(0, 59)}"
    if rng.random() < 0.6:
        time_part += ":" + chain(0, 59, seconds=True)
    parts.append(time_part)
    if rng.random() < 0.25:
        parts.append(rng.choice(["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo"]))
    return " ".join(parts)


def all_cases() -> list[Case]:
    cases: list[Case] = []

    def add(group: str, expressions: list[str], bases: tuple[str, ...] = DEFAULT_BASES, tz: str = "UTC") -> None:
        cases.extend(Case(expression, tz, bases, group) for expression in expressions)

    add("systemd-tests", SYSTEMD_TESTS, (BASE_NEW_YEAR, "2015-01-01 00:00:00", "2017-03-01 00:00:00"))
    add("systemd-rejected", SYSTEMD_REJECTED, ())
    add("shorthand", SHORTHANDS)
    add("month-end", MONTH_ENDS)
    add("leap-year", LEAP, (BASE_NEW_YEAR, BASE_LEAP, "2096-01-01 00:00:00"))
    add("impossible", IMPOSSIBLE, (BASE_NEW_YEAR, "1970-01-01 00:00:00"))
    add("fraction", FRACTIONS, (BASE_NEW_YEAR, BASE_FRACTION, "2026-12-31 23:59:58.900000"))
    add("weekday", WEEKDAYS)
    add("overflow", OVERFLOWS, (BASE_NEW_YEAR, "2026-12-31 22:40:00", "2027-01-31 21:00:00"))
    add("repetition", REPETITIONS)
    add("plain", PLAIN, (BASE_NEW_YEAR, BASE_MID_YEAR, BASE_FAR))
    add("rejected", REJECTED, ())
    for zone, bases in DST_ZONES.items():
        add("dst", [f"{expression} {zone}" for expression in DST_EXPRESSIONS], bases)
    for zone, bases in LOCAL_ZONES.items():
        add("local-zone", LOCAL_ZONE_EXPRESSIONS, bases, tz=zone)
    rng = random.Random(252)
    add("random", [random_expression(rng) for _ in range(RANDOM_CASES)], (BASE_NEW_YEAR, BASE_MID_YEAR))
    return cases


# -- running systemd -------------------------------------------------------------------------------


def parse_base(text: str) -> int:
    """UTC microseconds of a base written "YYYY-MM-DD HH:MM:SS[.ffffff]"."""
    moment = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return (moment - EPOCH) // timedelta(microseconds=1)


def iso(us: int) -> str:
    return (EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_STAMP = re.compile(r"\w{3} (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) UTC")


def run_analyze(expression: str, tz: str, base: str | None, iterations: int = ITERATIONS) -> dict[str, Any]:
    """Run systemd-analyze and return {"normalized", "elapses" (whole seconds), "end"} or {"rejected"}."""
    command = ["systemd-analyze", "calendar", f"--iterations={iterations}"]
    if base is not None:
        command.append(f"--base-time={base} UTC")
    command += ["--", expression]
    env = {"TZ": tz, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SYSTEMD_COLORS": "0", "LC_ALL": "C"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if "Failed to parse calendar specification" in done.stderr:
        return {"rejected": True}
    if "Failed to determine next elapse" in done.stderr:
        return {"error": True}
    if done.returncode != 0:
        raise RuntimeError(f"systemd-analyze failed for {expression!r}: {done.stderr.strip()}")
    normalized = None
    elapses: list[int] = []
    end = "more"
    for line in done.stdout.splitlines():
        label, _, value = line.strip().partition(": ")
        if label == "Normalized form":
            normalized = value
        elif label == "Next elapse" and value == "never":
            end = "never"
        elif label in ("Next elapse", "(in UTC)") or label.startswith("Iter"):
            if label != "(in UTC)" and tz != "UTC":
                continue  # local time; the "(in UTC)" line that follows is used instead
            match = _STAMP.fullmatch(value)
            if match is None:
                raise RuntimeError(f"cannot read {value!r} from systemd-analyze")
            elapses.append(parse_base(match[1]) // 1_000_000)
    if end == "more" and len(elapses) < iterations:
        end = "never"
    return {"normalized": normalized, "elapses": elapses, "end": end}


class Library:
    """systemd's own calendar functions through ctypes, for microsecond-exact elapses."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL(LIBRARY)
        self.lib.calendar_spec_from_string.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        self.lib.calendar_spec_next_usec.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)]
        self.lib.calendar_spec_free.argtypes = [ctypes.c_void_p]

    def elapses(self, expression: str, tz: str, base_us: int) -> tuple[list[int], str]:
        os.environ["TZ"] = tz
        time.tzset()
        spec = ctypes.c_void_p()
        if self.lib.calendar_spec_from_string(expression.encode(), ctypes.byref(spec)) < 0:
            raise RuntimeError(f"library rejects {expression!r} but systemd-analyze accepted it")
        out: list[int] = []
        current = base_us
        end = "more"
        try:
            for _ in range(ITERATIONS):
                found = ctypes.c_uint64()
                result = self.lib.calendar_spec_next_usec(spec, current, ctypes.byref(found))
                if result == -2:
                    end = "never"
                    break
                if result < 0:
                    end = "error"
                    break
                out.append(found.value)
                current = found.value
        finally:
            self.lib.calendar_spec_free(spec)
        return out, end


def generate() -> dict[str, Any]:
    version = subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True, check=True)
    library = Library() if os.path.exists(LIBRARY) else None
    records: list[dict[str, Any]] = []
    for case in all_cases():
        record: dict[str, Any] = {"expression": case.expression, "tz": case.tz, "group": case.group}
        probe = run_analyze(case.expression, case.tz, case.bases[0] if case.bases else None)
        if probe.get("rejected"):
            record["rejected"] = True
            records.append(record)
            continue
        if not case.bases:
            raise RuntimeError(f"{case.expression!r} was expected to be rejected but systemd accepts it")
        runs = []
        for base in case.bases:
            analyzed = run_analyze(case.expression, case.tz, base)
            record["normalized"] = analyzed.get("normalized", record.get("normalized"))
            base_us = parse_base(base)
            run: dict[str, Any] = {"base": iso(base_us)}
            if library is not None:
                exact, end = library.elapses(case.expression, case.tz, base_us)
                if analyzed.get("error"):
                    if end != "error":
                        raise RuntimeError(f"systemd-analyze failed but the library did not: {case}")
                elif [us // 1_000_000 for us in exact] != analyzed["elapses"] or end != analyzed["end"]:
                    raise RuntimeError(f"systemd-analyze and the library disagree on {case} from {base}")
                run.update(elapses=[iso(us) for us in exact], end=end, precision="us")
            elif analyzed.get("error"):
                run.update(elapses=[], end="error", precision="s")
            else:
                run.update(
                    elapses=[iso(s * 1_000_000) for s in analyzed["elapses"]], end=analyzed["end"], precision="s"
                )
            runs.append(run)
        if record.get("normalized") is None:
            # Only an error was printed; ask for the normalized form without computing elapses.
            record["normalized"] = run_analyze(case.expression, case.tz, None, iterations=0).get("normalized")
        record["runs"] = runs
        records.append(record)
    return {
        "generator": "tests/plugins/calendar/gen_calendar_golden.py",
        "systemd": version.stdout.splitlines()[0],
        "iterations": ITERATIONS,
        "cases": records,
    }


def main() -> int:
    data = generate()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    cases = data["cases"]
    rejected = sum(1 for case in cases if case.get("rejected"))
    print(f"wrote {len(cases)} cases ({rejected} rejected) to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
