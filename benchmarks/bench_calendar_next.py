"""Microseconds per ``CalendarTrigger.next_after`` call for typical and harder expressions.

Run: ``/work/venv/bin/python benchmarks/bench_calendar_next.py`` (add ``--quick`` for fewer rounds).
Each expression is timed from a spread of start instants (so month ends and weekends are included),
chaining calls the way a scheduler does; the best of several rounds is printed.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

from tickwork_calendar import CalendarTrigger

EXPRESSIONS = [
    "*-*-* *:*:00",
    "Mon..Fri 09:00",
    "*-*-01 00:00:00",
    "hourly",
    "daily",
    "*:0/15",
    "Mon..Fri *-*-* 09:00 Europe/Berlin",
    "*-*-* 02:30 America/New_York",
    "Sat *-*-1..7 18:00:00",
    "*-02-29 12:00",
    "*-*~01 23:59:59",
    "*:*:0/0.25",
    "*-02-30",
]


def bench(expression: str, calls: int, rounds: int) -> float:
    """Return the best mean microseconds per call over ``rounds`` rounds of ``calls`` calls."""
    trigger = CalendarTrigger(expression)
    starts = [datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=7 * i + 0.37) for i in range(64)]
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        done = 0
        for start in starts:
            moment = start
            for _ in range(calls // len(starts)):
                found = trigger.next_after(moment)
                done += 1
                moment = start if found is None else found
        elapsed = time.perf_counter() - began
        best = min(best, elapsed / done * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds")
    args = parser.parse_args()
    calls, rounds = (640, 3) if args.quick else (6400, 5)
    print(f"{'expression':40s} {'us/call':>8s}")
    for expression in EXPRESSIONS:
        print(f"{expression:40s} {bench(expression, calls, rounds):8.2f}")


if __name__ == "__main__":
    main()
