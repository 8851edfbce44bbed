"""``--rounds N``: each cell's numbers over its N repetitions, as median and range.

One run of a cell on a shared two-core machine moves by 10-30 % from the next (docs/benchmarks.md);
a ratio of two cells carries the noise of both. Repeating the cells in alternating order and
reading the median of each number, next to its range, keeps one slow neighbour from deciding a
comparison, and shows how far a single run can stray.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .cells import SYNC, Cell
from .metrics import CellResult
from .report import render

#: The numbers summarized (metric key, column header, format), in table order.
SUMMARIZED: tuple[tuple[str, str, str], ...] = (
    ("fires_per_s", "fires/s", ",.0f"),
    ("raw_ratio", "raw/tw", ".2f"),
    ("baseline_ratio", "vs {baseline}", ".2f"),
    ("lag_p99_ms", "p99 lag ms", ",.0f"),
    ("statements_per_fire", "stmt/fire", ".3f"),
    ("cpu_s_per_1k_fires", "cpu s/1k", ".3f"),
    ("window_cpu_s_per_1k_fires", "firing cpu/1k", ".3f"),
    ("db_cpu_s_per_1k_fires", "db cpu/1k", ".3f"),
)


@dataclass(frozen=True)
class Spread:
    """The median, lowest and highest of one number over the rounds that measured it."""

    median: float
    low: float
    high: float
    values: tuple[float, ...]

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """:raises ValueError: without values"""
        if not values:
            raise ValueError("a spread needs at least one value")
        return cls(statistics.median(values), min(values), max(values), tuple(values))

    def text(self, fmt: str) -> str:
        low, high = format(self.low, fmt), format(self.high, fmt)
        return format(self.median, fmt) if low == high else f"{self.median:{fmt}} ({low}-{high})"

    def as_json(self) -> dict[str, Any]:
        return {"median": self.median, "min": self.low, "max": self.high, "values": list(self.values)}


@dataclass
class CellSummary:
    """One cell's rounds: how many ran, how many failed, the duplicates, and each number's spread."""

    cell: Cell
    rounds: int = 0
    failed: int = 0
    duplicates: int = 0
    spreads: dict[str, Spread] = field(default_factory=dict)
    baseline: str | None = None

    def as_json(self) -> dict[str, Any]:
        cell = {k: v for k, v in self.cell.as_json().items() if k not in ("round_no", "rounds")}
        return {
            **cell,
            "rounds": self.rounds,
            "failed_rounds": self.failed,
            "duplicates": self.duplicates,
            "baseline": self.baseline,
            "metrics": {key: spread.as_json() for key, spread in self.spreads.items()},
        }


def summarize(results: Sequence[CellResult]) -> list[CellSummary]:
    """One summary per cell measured in more than one round, in the first round's order, with the
    spread of every number its rounds measured. A failed round counts in ``failed`` and its
    numbers are left out."""
    by_key: dict[tuple[Any, ...], list[CellResult]] = {}
    for r in results:
        if r.cell.rounds > 1 and r.cell.workload != SYNC:
            by_key.setdefault(r.cell.key, []).append(r)
    summaries = []
    for group in by_key.values():
        ok = [r for r in group if not r.failed]
        summary = CellSummary(
            cell=group[0].cell,
            rounds=len(group),
            failed=len(group) - len(ok),
            duplicates=sum(r.duplicates for r in group),
            baseline=next((r.metrics["baseline"] for r in ok if r.metrics.get("baseline")), None),
        )
        # Every number a round measured (the JSON keeps them all; the table shows SUMMARIZED).
        keys = dict.fromkeys(k for r in ok for k, v in r.metrics.items() if _is_number(v))
        for key in keys:
            summary.spreads[key] = Spread.of([float(r.metrics[key]) for r in ok if _is_number(r.metrics.get(key))])
        summaries.append(summary)
    return summaries


def median_results(summaries: Sequence[CellSummary]) -> list[CellResult]:
    """One result per summarized cell holding the medians (for the chart: one bar per cell)."""
    return [
        CellResult(
            replace(s.cell, round_no=1, rounds=1), metrics={key: spread.median for key, spread in s.spreads.items()}
        )
        for s in summaries
    ]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(key: str, fmt: str) -> Callable[[CellSummary], str]:
    def cell(s: CellSummary) -> str:
        spread = s.spreads.get(key)
        return "-" if spread is None else spread.text(fmt)

    return cell


def summary_table(summaries: Sequence[CellSummary]) -> str:
    """The summaries as aligned text: each number as ``median (lowest-highest)``."""
    baselines = sorted({s.baseline for s in summaries if s.baseline})
    columns: list[tuple[str, str, Callable[[CellSummary], str]]] = [
        ("store", "<", lambda s: s.cell.store),
        ("claim", "<", lambda s: s.cell.claim),
        ("membership", "<", lambda s: s.cell.membership),
        ("K", ">", lambda s: str(s.cell.nodes)),
        ("load", "<", lambda s: s.cell.workload),
        ("rounds", ">", lambda s: f"{s.rounds - s.failed}/{s.rounds}"),
        ("dup", ">", lambda s: f"{s.duplicates} FAIL" if s.duplicates else "0"),
    ]
    for key, header, fmt in SUMMARIZED:
        if key == "baseline_ratio":
            if not baselines:
                continue
            header = header.format(baseline="/".join(baselines))
        if any(key in s.spreads for s in summaries):
            columns.append((header, ">", _number(key, fmt)))
    return render(columns, summaries)
