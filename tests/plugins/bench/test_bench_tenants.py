"""``tickwork bench --workload tenants`` (a herd in namespace a beside every-second fires of
namespace b; docs/benchmarks.md): a tiny real run on SQLite measures both namespaces with every
fire once, and its metrics from rows. No timing is asserted."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tickwork_bench import cli
from tickwork_bench.cells import Cell, expand
from tickwork_bench.scratch import MeasuredRun
from tickwork_bench.tenants import HERD, TICKS, tenants_metrics


def test_tiny_tenants_cell_on_sqlite(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    status = cli.main(
        [
            "--store", "sqlite",
            "--claim", "optimistic",
            "--nodes", "1",
            "--workload", "tenants",
            "--schedules", "300",
            "--steady-schedules", "5",
            "--steady-seconds", "2",
            "--out", str(out),
            "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    (cell,) = doc["cells"]
    assert (cell["workload"], cell["schedules"], cell["others"]) == ("tenants", 300, 5)
    assert cell["errors"] == [], cell
    m = cell["metrics"]
    assert m["missed"] == 0 and m["duplicates"] == 0
    assert m["tick_fires_during_drain"] >= 5  # b's fires due at the herd's instant, at least
    assert m["tick_lag_p99_ms"] is not None and m["drain_s"] is not None


def test_tenants_cells_carry_both_namespaces_sizes() -> None:
    plan = expand(
        stores=["postgres"],
        claims_by_store={"postgres": ["skip-locked"]},
        memberships=["hashring"],
        nodes=[2],
        workloads=["tenants"],
        burst_schedules=20_000,
        stored=0,
        steady_schedules=100,
        steady_seconds=5.0,
        raw=True,
    )
    assert [(c.workload, c.schedules, c.others, c.seconds, c.claim) for c in plan.cells] == [
        ("tenants", 20_000, 100, 5.0, "skip-locked")  # no raw cell: the herd is not a burst cell
    ]


def test_tenants_metrics_split_the_namespaces_and_the_drain() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ms = timedelta(milliseconds=1)
    cell = Cell("sqlite", "optimistic", "single", 1, "tenants", 2, 2, seconds=1.0, others=1)
    herd = [MeasuredRun(i, t0, t0 + 100 * i * ms, t0 + (100 * i + 1) * ms, "succeeded") for i in (1, 2)]
    ticks = [
        MeasuredRun(3, t0, t0 + 7 * ms, t0 + 8 * ms, "succeeded"),
        MeasuredRun(3, t0 + 150 * ms, t0 + 160 * ms, t0 + 161 * ms, "succeeded"),  # during the drain
        MeasuredRun(3, t0 + 1000 * ms, t0 + 1002 * ms, None, "succeeded"),  # after it
        MeasuredRun(3, t0 + 2000 * ms, None, None, "skipped"),
    ]
    m = tenants_metrics(cell, t0, {HERD: herd, TICKS: ticks}, duplicates=0)
    assert (m["missed"], m["tick_fires_during_drain"], m["tick_skipped"]) == (0, 2, 1)
    assert m["drain_s"] == pytest.approx(0.201)
    assert m["tick_lag_max_ms"] == pytest.approx(10.0)
    assert m["tick_lag_p99_after_t0_ms"] == pytest.approx(10.0)
