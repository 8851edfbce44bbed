"""The results: a text table, a JSON file and (in :mod:`tickwork_bench.chart`) a PNG chart."""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .cells import RAW, SYNC, TENANTS
from .metrics import CellResult

T = TypeVar("T")
#: A table column: header, alignment ("<" or ">") and how to show one row's value.
Column = tuple[str, str, Callable[[CellResult], str]]


def _num(value: Any, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def raw_rates(results: Sequence[CellResult]) -> dict[tuple[str, int, int, int], float]:
    """Burst fires/s of the raw ceiling by (store, nodes, schedules, round)."""
    rates: dict[tuple[str, int, int, int], float] = {}
    for r in results:
        rate = r.metrics.get("fires_per_s")
        if r.cell.claim == RAW and rate:
            rates[(r.cell.store, r.cell.nodes, r.cell.schedules, r.cell.round_no)] = float(rate)
    return rates


def attach_raw_ratios(results: Sequence[CellResult]) -> None:
    """``raw_ratio``: how many times faster the bare driver drained the same burst in the same
    round (1.0 = no overhead)."""
    rates = raw_rates(results)
    for r in results:
        rate = r.metrics.get("fires_per_s")
        ceiling = rates.get((r.cell.store, r.cell.nodes, r.cell.schedules, r.cell.round_no))
        if r.cell.claim != RAW and r.cell.workload == "burst" and rate and ceiling:
            r.metrics["raw_ratio"] = ceiling / float(rate)


def attach_baseline_ratios(results: Sequence[CellResult], baseline: str | None) -> None:
    """``baseline_ratio``: a burst cell's fires/s over those of the same cell with the
    ``baseline`` membership in the same round (e.g. hashring against all; 1.0 = as fast)."""
    if baseline is None:
        return
    rates = {
        (c.store, c.claim, c.nodes, c.schedules, c.round_no): float(r.metrics["fires_per_s"])
        for r in results
        if (c := r.cell).membership == baseline and r.metrics.get("fires_per_s")
    }
    for r in results:
        c, rate = r.cell, r.metrics.get("fires_per_s")
        base = rates.get((c.store, c.claim, c.nodes, c.schedules, c.round_no))
        if c.claim != RAW and c.workload == "burst" and c.membership != baseline and rate and base:
            r.metrics["baseline_ratio"] = float(rate) / base
            r.metrics["baseline"] = baseline


def _fired(r: CellResult) -> str:
    m = r.metrics
    if not m:
        return "-"
    return f"{m.get('fires', 0):,}/{m.get('expected', 0):,}"


def _lag(r: CellResult) -> str:
    m = r.metrics
    return "/".join(_num(m.get(k), ",.0f") for k in ("lag_p50_ms", "lag_p99_ms", "lag_max_ms"))


def _wasted(r: CellResult) -> str:
    """Claim statements that came back empty / with fewer rows than asked, in percent of all."""
    m = r.metrics
    calls = m.get("claim_calls")
    if not calls:
        return "-"
    return f"{100 * m.get('claims_empty', 0) / calls:.0f}/{100 * m.get('claims_short', 0) / calls:.0f}"


def _dup(r: CellResult) -> str:
    if not r.metrics:
        return "-"
    return f"{r.duplicates} FAIL" if r.duplicates else "0"


COLUMNS: list[Column] = [
    ("store", "<", lambda r: r.cell.store),
    ("claim", "<", lambda r: r.cell.claim),
    ("membership", "<", lambda r: r.cell.membership),
    ("K", ">", lambda r: str(r.cell.nodes)),
    ("load", "<", lambda r: r.cell.workload),
    ("fired", ">", _fired),
    ("fires/s", ">", lambda r: _num(r.metrics.get("fires_per_s"))),
    ("drain s", ">", lambda r: _num(r.metrics.get("drain_s"), ".2f")),
    ("lag ms p50/p99/max", ">", _lag),
    ("dup", ">", _dup),
    ("empty/short%", ">", _wasted),
    ("stmt/fire", ">", lambda r: _num(r.metrics.get("statements_per_fire"), ".3f")),
    ("rt/fire", ">", lambda r: _num(r.metrics.get("round_trips_per_fire"), ".3f")),
    ("cpu s/1k", ">", lambda r: _num(r.metrics.get("cpu_s_per_1k_fires"), ".3f")),
    ("firing cpu/1k", ">", lambda r: _num(r.metrics.get("window_cpu_s_per_1k_fires"), ".3f")),
    ("db cpu/1k", ">", lambda r: _num(r.metrics.get("db_cpu_s_per_1k_fires"), ".3f")),
    ("rss MB", ">", lambda r: _num(r.metrics.get("node_rss_max_mb"), ".0f")),
    ("raw/tw", ">", lambda r: _num(r.metrics.get("raw_ratio"), ".2f")),
    ("other%", ">", lambda r: _num(r.metrics.get("other_cpu_pct"), ".0f")),
    ("status", "<", lambda r: "FAILED" if r.failed else "ok"),
]


def _start(round_name: str) -> Callable[[CellResult], str]:
    """The slowest node's start in seconds, and how many import times that is."""

    def cell(r: CellResult) -> str:
        seconds = r.metrics.get(f"start_{round_name}_s")
        ratio = r.metrics.get(f"start_{round_name}_ratio")
        if seconds is None:
            return "-"
        return f"{seconds:.2f}" if ratio is None else f"{seconds:.2f} ({ratio:.1f}x)"

    return cell


def _met(r: CellResult) -> str:
    met = r.metrics.get("met")
    return "-" if met is None else "yes" if met else "NO"


def _created(r: CellResult) -> str:
    """Schedules each node created on the empty store (with a sync lock, one node creates all)."""
    counts = r.metrics.get("created_by_node") or []
    return "+".join("?" if c is None else f"{c:,}" for c in counts) or "-"


#: Sync cells (node start with many declared jobs) measure none of the fire columns above.
SYNC_COLUMNS: list[Column] = [
    ("store", "<", lambda r: r.cell.store),
    ("claim", "<", lambda r: r.cell.claim),
    ("membership", "<", lambda r: r.cell.membership),
    ("K", ">", lambda r: str(r.cell.nodes)),
    ("sync jobs", ">", lambda r: f"{r.cell.schedules:,}"),
    ("import s", ">", lambda r: _num(r.metrics.get("import_s"), ".2f")),
    ("start empty s", ">", _start("empty")),
    ("start unchanged s", ">", _start("unchanged")),
    ("target s", ">", lambda r: _num(r.metrics.get("target_s"), ".2f")),
    ("met", "<", _met),
    ("created", ">", _created),
    (
        "node cpu s",
        ">",
        lambda r: "/".join(_num(r.metrics.get(k), ".2f") for k in ("nodes_cpu_empty_s", "nodes_cpu_unchanged_s")),
    ),
    ("stored", ">", lambda r: _num(r.metrics.get("stored"), ",d")),
    ("status", "<", lambda r: "FAILED" if r.failed else "ok"),
]


#: Tenants cells (a herd in namespace a beside every-second fires of namespace b).
TENANTS_COLUMNS: list[Column] = [
    ("store", "<", lambda r: r.cell.store),
    ("claim", "<", lambda r: r.cell.claim),
    ("membership", "<", lambda r: r.cell.membership),
    ("K", ">", lambda r: str(r.cell.nodes)),
    ("a herd", ">", lambda r: f"{r.cell.schedules:,}"),
    ("a drain s", ">", lambda r: _num(r.metrics.get("drain_s"), ".2f")),
    ("a fires/s", ">", lambda r: _num(r.metrics.get("fires_per_s"), ",.0f")),
    ("a p99 ms", ">", lambda r: _num(r.metrics.get("herd_lag_p99_ms"), ",.0f")),
    ("b every s", ">", lambda r: f"{r.cell.others:,}"),
    ("b fires meanwhile", ">", lambda r: _num(r.metrics.get("tick_fires_during_drain"), ",d")),
    ("b p50 ms", ">", lambda r: _num(r.metrics.get("tick_lag_p50_ms"), ",.0f")),
    ("b p99 ms", ">", lambda r: _num(r.metrics.get("tick_lag_p99_ms"), ",.0f")),
    ("b max ms", ">", lambda r: _num(r.metrics.get("tick_lag_max_ms"), ",.0f")),
    ("b p99 after t0", ">", lambda r: _num(r.metrics.get("tick_lag_p99_after_t0_ms"), ",.0f")),
    ("b skipped", ">", lambda r: _num(r.metrics.get("tick_skipped"), ",d")),
    ("dup", ">", lambda r: str(r.metrics.get("duplicates", "-"))),
    ("other%", ">", lambda r: _num(r.metrics.get("other_cpu_pct"), ".0f")),
    ("status", "<", lambda r: "FAILED" if r.failed else "ok"),
]


def render(columns: Sequence[tuple[str, str, Callable[[T], str]]], items: Sequence[T]) -> str:
    """``items`` as aligned text, one line each, under the columns' headers."""
    rows = [[fn(item) for _, _, fn in columns] for item in items]
    widths = [max([len(name)] + [len(row[i]) for row in rows]) for i, (name, _, _) in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        out = []
        for (_, align, _), width, cell in zip(columns, widths, cells, strict=True):
            out.append(cell.ljust(width) if align == "<" else cell.rjust(width))
        return "  ".join(out).rstrip()

    lines = [line([name for name, _, _ in columns]), line(["-" * w for w in widths])]
    lines += [line(row) for row in rows]
    return "\n".join(lines)


def _baseline_column(results: Sequence[CellResult]) -> list[Column]:
    """``vs <membership>`` (:func:`attach_baseline_ratios`), when some cell has it."""
    names = {r.metrics["baseline"] for r in results if r.metrics.get("baseline")}
    if not names:
        return []
    return [(f"vs {'/'.join(sorted(names))}", ">", lambda r: _num(r.metrics.get("baseline_ratio"), ".2f"))]


def table(results: Sequence[CellResult]) -> str:
    """The results as aligned text, one line per cell: the fire cells, then the sync cells in
    their own table."""
    fired = [r for r in results if r.cell.workload not in (SYNC, TENANTS)]
    synced = [r for r in results if r.cell.workload == SYNC]
    tenants = [r for r in results if r.cell.workload == TENANTS]
    columns = COLUMNS[:-2] + _baseline_column(fired) + COLUMNS[-2:]
    if any(r.cell.rounds > 1 for r in fired):
        columns = [("round", ">", lambda r: str(r.cell.round_no)), *columns]
    tables = [render(columns, fired)] if fired or not (synced or tenants) else []
    if synced:
        tables.append(render(SYNC_COLUMNS, synced))
    if tenants:
        tables.append(render(TENANTS_COLUMNS, tenants))
    return "\n\n".join(tables)


def failures(results: Sequence[CellResult]) -> list[str]:
    """One explanation per failed cell."""
    out = []
    for r in results:
        if r.duplicates:
            out.append(f"{r.cell.label}: {r.duplicates} duplicate fire(s)")
        for error in r.errors:
            out.append(f"{r.cell.label}: {error}")
    return out


def code_version() -> dict[str, Any]:
    """The tickwork version measured, and its git commit when it runs from a checkout."""
    import subprocess

    from tickwork import __file__ as package_file

    info: dict[str, Any] = {"path": str(Path(package_file).parent)}
    try:
        from importlib.metadata import version

        info["version"] = version("tickwork")
    except Exception:  # not installed as a distribution
        info["version"] = None
    try:
        where = Path(package_file).parent
        commit = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if commit.returncode == 0:
            info["commit"] = commit.stdout.strip()
            dirty = subprocess.run(
                ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            info["modified_files"] = len(dirty.stdout.splitlines())
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    try:
        import psutil

        info["memory_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:  # pragma: no cover - psutil is in the bench extra
        pass
    return info


def document(
    results: Sequence[CellResult],
    *,
    command: Sequence[str],
    settings: dict[str, Any],
    databases: Sequence[dict[str, Any]],
    started_at: str,
    duration_s: float,
    summaries: Sequence[Any] = (),
    python_speed: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The JSON results file; ``summaries``: :class:`tickwork_bench.rounds.CellSummary` of a run
    with ``--rounds``."""
    return {
        "command": list(command),
        "started_at": started_at,
        "duration_s": round(duration_s, 1),
        # python_workload_ms: tickwork_bench.calibrate at the start and the end of the run.
        "machine": {**machine(), "python_workload_ms": python_speed},
        "code": code_version(),
        "databases": list(databases),
        "settings": settings,
        "failed": any(r.failed for r in results),
        "cells": [r.as_json() for r in results],
        "summary": [s.as_json() for s in summaries],
    }


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
