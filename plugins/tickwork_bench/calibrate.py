"""How fast this machine runs plain Python right now: a fixed workload, timed.

The machine the benchmarks run on is shared, and its speed moves from one session to the next by a
factor of two (the in-process SQLite drain took 33 µs of engine CPU per fire in one session and 79
in the next, the code unchanged; docs/benchmarks.md). Ratios to the raw loop cancel that out; absolute numbers,
such as node CPU per 1,000 fires, do not. This number, measured at the start and at the end of a
run and written with the results, lets a reader tell a slower machine from slower code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

#: Timed repetitions; the fastest one counts (the least disturbed by other processes).
REPEATS = 15


@dataclass(frozen=True)
class _Item:
    key: int
    name: str


def _workload() -> int:
    """Dict, tuple, string, object and sort work, the kinds a node does per fire (about 10 ms
    here in a fast phase)."""
    table: dict[int, _Item] = {}
    for i in range(30_000):
        table[i % 1_009] = _Item(i, str(i))
    ordered = sorted(table.values(), key=lambda item: (item.name, item.key))
    return sum(len(item.name) for item in ordered)


def python_speed_ms(repeats: int = REPEATS) -> float:
    """Milliseconds the fixed workload takes on this machine now (the fastest of ``repeats``)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        _workload()
        best = min(best, time.perf_counter() - started)
    return round(best * 1000.0, 2)
