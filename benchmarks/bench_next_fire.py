"""Microseconds per ``next_after`` call of the cron/interval/once triggers, next to croniter.

Run: ``/work/venv/bin/python benchmarks/bench_next_fire.py [--iterations N]``

Each call continues from the previous fire time (as the engine does), starting at a fixed
instant and going back to it every ``RESTART`` calls so that yearly-ish expressions stay within a
realistic horizon. croniter is timed the same way through ``get_next`` on one iterator; its
6-field form is converted (croniter puts seconds last).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from croniter import croniter

from tickwork.abc import Trigger
from tickwork_cron import CronTrigger
from tickwork_interval import IntervalTrigger, OnceTrigger

START = datetime(2026, 1, 1, 0, 0, 7, tzinfo=UTC)
RESTART = 200

CRON_CASES: list[tuple[str, str]] = [
    ("*/5 * * * *", "UTC"),
    ("0 0 * * *", "UTC"),
    ("*/1 * * * * *", "UTC"),
    ("0 9 * * 1-5", "UTC"),
    ("0 0 1 * *", "UTC"),
    ("0 0 29 2 *", "UTC"),
    ("*/5 * * * *", "Europe/Berlin"),
    ("0 0 * * *", "Europe/Berlin"),
    ("*/1 * * * * *", "Europe/Berlin"),
    ("0 9 * * 1-5", "America/New_York"),
    ("30 2 * * *", "Europe/Berlin"),
]
OTHER_CASES: list[tuple[type[Trigger], str]] = [
    (IntervalTrigger, "90s"),
    (IntervalTrigger, "1h30m@2026-01-01T00:00:00Z"),
    (OnceTrigger, "2030-01-01T00:00:00Z"),
]


def per_call(step: Callable[[], object], iterations: int) -> float:
    """Best of three runs, in microseconds per call (the minimum is the least noisy estimate)."""
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        for _ in range(iterations):
            step()
        best = min(best, (time.perf_counter() - began) / iterations)
    return best * 1e6


def chained(trigger: Trigger) -> Callable[[], object]:
    state = [START]
    calls = [0]

    def step() -> object:
        calls[0] += 1
        nxt = trigger.next_after(state[0])
        state[0] = START if nxt is None or calls[0] % RESTART == 0 else nxt
        return nxt

    return step


def croniter_step(expression: str, zone: str) -> Callable[[], object]:
    fields = expression.split()
    if len(fields) == 6:
        fields = [*fields[1:], fields[0]]  # croniter expects seconds last
    start = START.astimezone(ZoneInfo(zone))
    iterator = croniter(" ".join(fields), start)
    calls = [0]

    def step() -> object:
        calls[0] += 1
        if calls[0] % RESTART == 0:
            iterator.set_current(start, force=True)
        return iterator.get_next(datetime)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args()
    print(f"{'expression':<36} {'zone':<18} {'tickwork us':>12} {'croniter us':>12} {'speed-up':>9}")
    for expression, zone in CRON_CASES:
        ours = per_call(chained(CronTrigger(expression, zone)), args.iterations)
        theirs = per_call(croniter_step(expression, zone), max(1, args.iterations // 10))
        print(f"{expression:<36} {zone:<18} {ours:>12.2f} {theirs:>12.2f} {theirs / ours:>8.1f}x")
    for cls, expression in OTHER_CASES:
        ours = per_call(chained(cls(expression)), args.iterations)
        print(f"{cls.kind + ' ' + expression:<36} {'UTC':<18} {ours:>12.2f} {'-':>12} {'-':>9}")


if __name__ == "__main__":
    main()
