"""Turning the history rows and the nodes' counters of one cell into its numbers."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .cells import Cell
from .scratch import MeasuredRun


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100) of unsorted ``values``; ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _ms(delta: timedelta) -> float:
    return delta.total_seconds() * 1000.0


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


@dataclass
class CellResult:
    """The measured numbers of one cell; ``errors`` non-empty means the cell failed."""

    cell: Cell
    metrics: dict[str, Any] = field(default_factory=dict)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        return int(self.metrics.get("duplicates", 0) or 0)

    @property
    def failed(self) -> bool:
        return bool(self.errors) or self.duplicates > 0

    def as_json(self) -> dict[str, Any]:
        return {**self.cell.as_json(), "metrics": self.metrics, "node_results": self.nodes, "errors": self.errors}


def nothing_fired(metrics: dict[str, Any]) -> str | None:
    """The error of a cell whose nodes ran but fired nothing that was due (every round statement
    refused, say): a failed cell, not a slow one. Such a cell was once reported ``ok`` with
    0/10,000 fired."""
    if metrics.get("expected") and not metrics.get("fires"):
        return f"no fire ran of the {metrics['expected']:,} due: the nodes' logs say why"
    return None


def lag_metrics(rows: Sequence[MeasuredRun]) -> dict[str, Any]:
    """started_at - scheduled_for over the started runs, in milliseconds."""
    lags = [_ms(r.started_at - r.scheduled_for) for r in rows if r.started_at is not None]
    return {
        "lag_p50_ms": percentile(lags, 50),
        "lag_p99_ms": percentile(lags, 99),
        "lag_max_ms": max(lags) if lags else None,
    }


def node_metrics(nodes: Sequence[dict[str, Any]], fires: int) -> dict[str, Any]:
    """Sums of the node counters, per fire where that is what compares across cells."""

    def total(key: str) -> float:
        return float(sum(n.get(key, 0) or 0 for n in nodes))

    calls = total("claim_calls")
    return {
        "claim_calls": int(calls),
        "claims_empty": int(total("claims_empty")),
        "claims_short": int(total("claims_short")),
        "wasted_claim_pct": _pct(total("claims_empty") + total("claims_short"), calls),
        "claim_yield_pct": _pct(total("claimed"), total("asked")),
        "claims_without_run": int(total("claims_without_run")),
        "fenced_out": int(total("fenced_out")),
        "statements_per_fire": _ratio(total("db_statements"), fires),
        "round_trips_per_fire": _ratio(total("db_calls"), fires),
        "commits_per_fire": _ratio(total("commits"), fires),
        "store_statements_per_fire": _ratio(total("store_statements"), fires),
        "cpu_s_per_1k_fires": _ratio(total("cpu_seconds") * 1000.0, fires),
        "node_rss_max_mb": max((float(n.get("maxrss_mb", 0.0)) for n in nodes), default=None),
    }


def _pct(num: float, den: float) -> float | None:
    return 100.0 * num / den if den else None


def burst_metrics(cell: Cell, t0: datetime, rows: Sequence[MeasuredRun], duplicates: int) -> dict[str, Any]:
    """Drain time from the due instant to the last recorded end, and the rate it implies."""
    at_t0 = [r for r in rows if r.scheduled_for == t0]
    ok = [r for r in at_t0 if r.status == "succeeded"]
    ends = [r.finished_at for r in ok if r.finished_at is not None]
    starts = [r.started_at for r in ok if r.started_at is not None]
    drain = (max(ends) - t0).total_seconds() if ends else None
    statuses = Counter(r.status for r in at_t0)
    return {
        "fires": len(ok),
        "expected": cell.schedules,
        "missed": cell.schedules - len(ok),
        "statuses": dict(statuses),
        "drain_s": drain,
        "fires_per_s": len(ok) / drain if drain else None,
        "first_start_ms": _ms(min(starts) - t0) if starts else None,
        **lag_metrics(ok),
        "duplicates": duplicates,
    }


def steady_metrics(cell: Cell, t0: datetime, rows: Sequence[MeasuredRun], duplicates: int) -> dict[str, Any]:
    """Fires due in ``[t0, t0 + seconds)``: achieved against expected, and their lag."""
    seconds = int(cell.seconds)
    end = t0 + timedelta(seconds=seconds)
    window = [r for r in rows if t0 <= r.scheduled_for < end]
    ok = [r for r in window if r.status == "succeeded"]
    expected = cell.schedules * seconds
    statuses = Counter(r.status for r in window)
    return {
        "fires": len(ok),
        "expected": expected,
        "missed": expected - len(ok),
        "statuses": dict(statuses),
        "fires_per_s": len(ok) / seconds if seconds else None,
        **lag_metrics(ok),
        "duplicates": duplicates,
    }
