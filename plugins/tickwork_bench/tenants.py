"""The ``tenants`` workload: two namespaces on one cluster (docs/teams.md#fair-firing).

Namespace ``a`` holds ``cell.schedules`` schedules due at one instant (a herd, as ``burst``);
namespace ``b`` holds ``cell.others`` schedules firing every second from that instant. The cell runs
until the herd has drained and ``cell.seconds`` have passed, then measures the herd's drain and
``b``'s lag over the fires due while the herd drained: with fair claims, ``b``'s lag stays what it
is without a herd; claimed earliest first, ``b``'s fires wait behind the whole herd.

``--node-import tickwork_bench.earliestfirst`` runs the nodes with the claim before namespaces (one
statement, earliest first across namespaces): the baseline the fair claim is compared with.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from tickwork.sql.schema import runs, schedules

from .cells import Cell
from .metrics import CellResult, lag_metrics, node_metrics, percentile
from .procs import ChildError
from .progress import Progress
from .scratch import YEARLY, Armed, DueSet, MeasuredRun, Scratch
from .workloads import (
    POLL_SECONDS,
    STEADY_EXPRESSION,
    CpuMeter,
    Settings,
    add_cpu_shares,
    start_nodes,
    stop_children,
)

HERD = "a"
TICKS = "b"


def _rows(scratch: Scratch, t0: datetime) -> dict[str, list[MeasuredRun]]:
    """The runs due at or after ``t0``, by namespace."""
    query = (
        select(
            schedules.c.namespace,
            runs.c.schedule_id,
            runs.c.scheduled_for,
            runs.c.started_at,
            runs.c.finished_at,
            runs.c.status,
        )
        .join(schedules, schedules.c.id == runs.c.schedule_id)
        .where(runs.c.scheduled_for >= t0)
    )
    out: dict[str, list[MeasuredRun]] = {HERD: [], TICKS: []}
    with scratch.engine.connect() as conn:
        for namespace, *row in conn.execute(query):
            out.setdefault(namespace, []).append(MeasuredRun(*row))
    return out


def _herd_ended(scratch: Scratch) -> int:
    query = (
        select(func.count())
        .select_from(runs.join(schedules, schedules.c.id == runs.c.schedule_id))
        .where(schedules.c.namespace == HERD, runs.c.status != "running")
    )
    with scratch.engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


def wait_tenants(scratch: Scratch, cell: Cell, armed: Armed, settings: Settings, progress: Progress) -> str | None:
    """Wait until the herd has ended and ``cell.seconds`` have passed; an error text on timeout."""
    deadline = armed.local_deadline(max(30.0, cell.schedules / settings.min_burst_rate))
    least = armed.local_deadline(cell.seconds)
    while time.monotonic() < deadline:
        ended = _herd_ended(scratch)
        progress.update(ended, cell.schedules)
        if ended >= cell.schedules and time.monotonic() >= least:
            return None
        time.sleep(POLL_SECONDS)
    return f"herd not drained in time: {_herd_ended(scratch)} of {cell.schedules} runs ended"


def tenants_metrics(cell: Cell, t0: datetime, rows: dict[str, list[MeasuredRun]], duplicates: int) -> dict[str, Any]:
    """The herd's drain and lag; ``b``'s lag over its fires due while the herd drained (from
    ``t0`` to the herd's last end) and over the whole window."""
    herd = [r for r in rows[HERD] if r.scheduled_for == t0 and r.status == "succeeded"]
    ends = [r.finished_at for r in herd if r.finished_at is not None]
    drained = max(ends) if ends else None
    drain = (drained - t0).total_seconds() if drained is not None else None
    window_end = t0 + timedelta(seconds=int(cell.seconds))
    ticks = [r for r in rows[TICKS] if r.status == "succeeded"]
    during = [r for r in ticks if drained is not None and r.scheduled_for <= drained]
    measured = [r for r in ticks if r.scheduled_for < max(window_end, drained or window_end)]
    lags = lag_metrics(during)
    # Those not due at the herd's own instant: b's fires that arrive while the herd drains.
    after = lag_metrics([r for r in during if r.scheduled_for > t0])
    herd_lags = lag_metrics(herd)
    return {
        "fires": len(herd) + len(measured),
        "expected": cell.schedules,
        "missed": cell.schedules - len(herd),
        "statuses": dict(Counter(r.status for r in rows[HERD] + rows[TICKS])),
        "drain_s": drain,
        "fires_per_s": len(herd) / drain if drain else None,
        "herd_lag_p99_ms": herd_lags["lag_p99_ms"],
        "tick_fires_during_drain": len(during),
        "tick_lag_p50_ms": lags["lag_p50_ms"],
        "tick_lag_p99_ms": lags["lag_p99_ms"],
        "tick_lag_max_ms": lags["lag_max_ms"],
        "tick_lag_p99_after_t0_ms": after["lag_p99_ms"],
        "tick_skipped": sum(1 for r in rows[TICKS] if r.status == "skipped"),
        "tick_lag_p99_all_ms": percentile(
            [(r.started_at - r.scheduled_for).total_seconds() * 1000.0 for r in measured if r.started_at], 99
        ),
        "duplicates": duplicates,
    }


def run_tenants_cell(index: int, cell: Cell, scratch: Scratch, settings: Settings, progress: Progress) -> CellResult:
    """Measure one tenants cell (K node processes)."""
    result = CellResult(cell)
    scratch.prepare(index)
    progress.update(0, 0, "seeding")
    scratch.seed(
        cell.schedules,
        cell.stored,
        DueSet("cron", lambda _i: YEARLY, namespace=HERD),
        [(cell.others, DueSet("cron", lambda _i: STEADY_EXPRESSION, namespace=TICKS))],
    )
    max_seconds = settings.ready_timeout + settings.settle + settings.lead
    max_seconds += max(30.0, cell.schedules / settings.min_burst_rate) + cell.seconds
    children = start_nodes(cell, index, scratch, settings, max_seconds)
    armed: Armed | None = None
    shares: dict[str, float | None] = {}
    try:
        progress.update(0, 0, "starting nodes")
        for child in children:
            child.wait_event("ready", settings.ready_timeout)
        time.sleep(settings.settle if cell.nodes > 1 else 0.2)
        # Aligned to a whole second: b's every-second fires are due at t0, t0 + 1 s, ...
        armed = scratch.arm(settings.lead, align=True, fresh_stats=settings.fresh_stats)
        cpu = CpuMeter([c.proc.pid for c in children], scratch.database_name())
        error = wait_tenants(scratch, cell, armed, settings, progress)
        if error:
            result.errors.append(error)
        shares = cpu.stop()
    except ChildError as exc:
        result.errors.append(str(exc))
    finally:
        stop_children(children, result, settings)
    if armed is not None:
        metrics = tenants_metrics(cell, armed.t0, _rows(scratch, armed.t0), scratch.duplicates())
        metrics.update(node_metrics(result.nodes, metrics["fires"]))
        metrics["duplicates"] += metrics.get("claims_without_run", 0)
        add_cpu_shares(metrics, shares)
        metrics["t0"] = armed.t0.isoformat()
        result.metrics = metrics
    return result


def tenants_summary(result: CellResult) -> str:
    """One line for the progress log."""
    m = result.metrics
    parts = []
    if m.get("drain_s") is not None:
        parts.append(f"a: {m['expected'] - m['missed']:,} drained in {m['drain_s']:.2f} s")
    if m.get("tick_lag_p99_ms") is not None:
        parts.append(f"b: p99 lag {m['tick_lag_p99_ms']:.0f} ms over {m['tick_fires_during_drain']} fires meanwhile")
    if m:
        parts.append(f"{m.get('duplicates', 0)} dup")
    if result.errors:
        parts.append("FAILED: " + result.errors[0].splitlines()[0])
    return ", ".join(parts)
