"""``tickwork bench``: a tiny real run over SQLite and PostgreSQL, plus the parts it is built from.

No timing is asserted (timings belong in benchmarks/): only that every selected cell was measured,
fired every schedule exactly once, and that the scratch database is gone afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
from sqlalchemy import insert

from tests.support.servers.mysql import MySQLServer
from tests.support.servers.postgres import PostgresServer
from tickwork.sql.schema import runs
from tickwork_bench import cli, statementkinds
from tickwork_bench.cells import Cell, expand
from tickwork_bench.metrics import CellResult, burst_metrics, percentile, steady_metrics
from tickwork_bench.report import attach_baseline_ratios, attach_raw_ratios, table
from tickwork_bench.rounds import median_results, summarize, summary_table
from tickwork_bench.scratch import YEARLY, DueSet, MeasuredRun, SQLiteScratch
from tickwork_mysql.store import MySQLStore


def scratch_databases(server: PostgresServer) -> list[str]:
    """Databases this test process's bench runs created (their names carry our pid)."""
    with psycopg.connect(server.conninfo(server.maintenance_dbname), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (f"tickwork_bench_{os.getpid()}_%",)
        ).fetchall()
    return [r[0] for r in rows]


def test_tiny_burst_over_sqlite_and_postgres(postgres_server: PostgresServer, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    status = cli.main(
        [
            "--store", "sqlite,postgres",
            "--claim", "optimistic",
            "--nodes", "1,2",
            "--membership", "all",
            "--workload", "burst",
            "--schedules", "200",
            "--settle", "0.5",
            "--pg-url", postgres_server.url("postgres"),
            "--out", str(out),
            "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    assert doc["failed"] is False
    seen = {(c["store"], c["claim"], c["membership"], c["nodes"]) for c in doc["cells"]}
    assert seen == {
        (store, claim, membership, k)
        for store in ("sqlite", "postgres")
        for claim, membership, k in (
            ("raw", "-", 1),
            ("raw", "-", 2),
            ("optimistic", "single", 1),
            ("optimistic", "all", 2),
        )
    }
    for cell in doc["cells"]:
        m = cell["metrics"]
        assert cell["errors"] == [], cell
        assert m["duplicates"] == 0, cell
        assert m["fires"] == m["expected"] == 200, cell
        assert m["fires_per_s"] > 0
        assert len(cell["node_results"]) == cell["nodes"]
        if cell["claim"] != "raw":
            assert sum(n["finished"] for n in cell["node_results"]) == 200
    assert scratch_databases(postgres_server) == []


def test_tiny_mysql_cells_compare_its_claim_strategies(mysql_server: MySQLServer, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    status = cli.main(
        [
            "--store", "mysql",
            "--claim", "all",
            "--nodes", "1",
            "--workload", "burst,steady",
            "--schedules", "60",
            "--steady-schedules", "10",
            "--steady-seconds", "1",
            "--settle", "0.5",
            "--mysql-url", mysql_server.url("mysql"),
            "--out", str(out),
            "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    # No raw cell: the bare-driver ceiling has no MySQL worker.
    assert {(c["claim"], c["workload"]) for c in doc["cells"]} == {
        (claim, workload) for claim in MySQLStore.claim_strategies for workload in ("burst", "steady")
    }
    for cell in doc["cells"]:
        assert cell["errors"] == [], cell
        assert cell["metrics"]["duplicates"] == 0, cell
        assert cell["metrics"]["fires"] == cell["metrics"]["expected"], cell
    with contextlib.closing(mysql_server.connect()) as conn, conn.cursor() as cur:
        cur.execute("SHOW DATABASES LIKE %s", (f"tickwork_bench_{os.getpid()}_%",))
        assert cur.fetchall() == ()


def test_tiny_steady_and_spread_sqlite(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    status = cli.main(
        [
            "--store", "sqlite",
            "--claim", "optimistic",
            "--nodes", "1",
            "--workload", "steady,spread",
            "--steady-schedules", "20",
            "--steady-seconds", "2",
            "--out", str(out),
            "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    assert [c["workload"] for c in doc["cells"]] == ["steady", "spread"]
    for cell in doc["cells"]:
        assert cell["errors"] == [], cell
        assert cell["metrics"]["expected"] == 40
        assert cell["metrics"]["duplicates"] == 0
        assert cell["metrics"]["lag_p99_ms"] is not None
        # The fire window's CPU is part of the whole node lifetime's (start and stop excluded).
        assert 0 < cell["metrics"]["window_cpu_s_per_1k_fires"] < cell["metrics"]["cpu_s_per_1k_fires"]


def test_unknown_membership_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--membership", "nope", "--no-progress"]) == cli.EXIT_USAGE
    assert "--membership: 'nope' is not registered" in capsys.readouterr().err


def test_claim_supported_by_no_selected_store_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--store", "sqlite", "--claim", "skip-locked", "--no-progress"]) == cli.EXIT_USAGE
    assert "skip-locked not supported by sqlite" in capsys.readouterr().err


def test_duplicates_counts_a_second_run_for_the_same_fire() -> None:
    scratch = SQLiteScratch()
    try:
        scratch.prepare(1)
        scratch.seed(2, 2, DueSet("cron", lambda _i: YEARLY))
        t = datetime(2026, 1, 1, tzinfo=UTC)
        rows = [
            {"schedule_id": 1, "scheduled_for": t, "attempt": 1, "status": "succeeded"},
            {"schedule_id": 1, "scheduled_for": t, "attempt": 2, "status": "succeeded"},
            {"schedule_id": 2, "scheduled_for": t, "attempt": 1, "status": "succeeded"},
        ]
        with scratch.engine.begin() as conn:
            conn.execute(insert(runs), rows)
        assert scratch.duplicates() == 1
    finally:
        scratch.close()
    assert not scratch.directory.exists()


def test_expand_uses_single_for_one_node_and_raw_once_per_node_count() -> None:
    plan = expand(
        stores=["postgres"],
        claims_by_store={"postgres": ["skip-locked", "optimistic"]},
        memberships=["single", "hashring", "all"],
        nodes=[1, 3],
        workloads=["burst", "steady"],
        burst_schedules=100,
        stored=1000,
        steady_schedules=10,
        steady_seconds=2.0,
        raw=True,
    )
    labels = [c.label for c in plan.cells]
    assert labels.count("postgres/raw/-/K=1 burst") == 1
    assert "postgres/skip-locked/single/K=1 burst" in labels
    assert "postgres/skip-locked/single/K=3 burst" not in labels
    assert "postgres/optimistic/hashring/K=3 steady" in labels
    assert not any(c.claim == "raw" for c in plan.cells if c.workload == "steady")
    assert all(c.stored == 1000 for c in plan.cells)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([], 50) is None


def test_burst_and_steady_metrics_from_rows() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ms = timedelta(milliseconds=1)
    burst = Cell("sqlite", "optimistic", "single", 1, "burst", 3, 3)
    rows = [MeasuredRun(i, t0, t0 + i * 10 * ms, t0 + (i * 10 + 5) * ms, "succeeded") for i in range(1, 3)]
    m = burst_metrics(burst, t0, rows, duplicates=0)
    assert (m["fires"], m["missed"]) == (2, 1)
    assert m["drain_s"] == pytest.approx(0.025)
    assert m["lag_max_ms"] == pytest.approx(20.0)

    steady = Cell("sqlite", "optimistic", "single", 1, "steady", 2, 2, seconds=2.0)
    rows = [
        MeasuredRun(1, t0, t0 + 3 * ms, t0 + 4 * ms, "succeeded"),
        MeasuredRun(2, t0, t0 + 5 * ms, t0 + 6 * ms, "succeeded"),
        MeasuredRun(1, t0 + 1000 * ms, t0 + 1001 * ms, t0 + 1002 * ms, "succeeded"),
        MeasuredRun(2, t0 + 1000 * ms, None, None, "skipped"),
        MeasuredRun(1, t0 + 2000 * ms, t0 + 2001 * ms, None, "succeeded"),  # outside the window
    ]
    m = steady_metrics(steady, t0, rows, duplicates=0)
    assert (m["fires"], m["expected"], m["missed"]) == (3, 4, 1)
    assert m["statuses"] == {"succeeded": 3, "skipped": 1}
    assert m["lag_p50_ms"] == pytest.approx(3.0)


def test_table_marks_duplicates_as_failure() -> None:
    from tickwork_bench.metrics import CellResult

    ok = CellResult(Cell("sqlite", "optimistic", "single", 1, "burst", 1, 1), metrics={"fires": 1, "duplicates": 0})
    bad = CellResult(Cell("sqlite", "optimistic", "all", 2, "burst", 1, 1), metrics={"fires": 1, "duplicates": 2})
    lines = table([ok, bad]).splitlines()
    assert lines[2].rstrip().endswith("ok")
    assert "2 FAIL" in lines[3] and lines[3].rstrip().endswith("FAILED")


def test_tiny_burst_with_metrics_on(tmp_path: Path) -> None:
    """``--metrics`` runs the nodes with the metrics plugin (the lead compares on vs off)."""
    out = tmp_path / "results.json"
    status = cli.main(
        [
            "--store", "sqlite",
            "--claim", "optimistic",
            "--nodes", "1",
            "--workload", "burst",
            "--schedules", "50",
            "--no-raw",
            "--metrics",
            "--out", str(out),
            "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    assert doc["settings"]["metrics"] is True
    (cell,) = doc["cells"]
    assert cell["errors"] == [], cell
    assert cell["metrics"]["duplicates"] == 0


def test_sync_cells_declare_the_schedules_and_have_no_raw_cell() -> None:
    plan = expand(
        stores=["sqlite", "postgres"],
        claims_by_store={"sqlite": ["optimistic"], "postgres": ["skip-locked"]},
        memberships=["hashring"],
        nodes=[1, 3],
        workloads=["sync"],
        burst_schedules=500,
        stored=10_000,
        steady_schedules=10,
        steady_seconds=2.0,
        raw=True,
    )
    assert [c.label for c in plan.cells] == [
        "sqlite/optimistic/single/K=1 sync",
        "sqlite/optimistic/hashring/K=3 sync",
        "postgres/skip-locked/single/K=1 sync",
        "postgres/skip-locked/hashring/K=3 sync",
    ]
    assert {(c.schedules, c.stored, c.seconds) for c in plan.cells} == {(500, 500, 0.0)}


def test_table_shows_sync_cells_in_their_own_table() -> None:
    from tickwork_bench.metrics import CellResult

    burst = CellResult(Cell("sqlite", "optimistic", "single", 1, "burst", 1, 1), metrics={"fires": 1, "duplicates": 0})
    metrics = {
        "import_s": 2.0,
        "start_empty_s": 7.5,
        "start_empty_ratio": 3.75,
        "start_unchanged_s": 9.5,
        "start_unchanged_ratio": 4.75,
        "target_s": 9.0,
        "met": False,
        "created_by_node": [0, 20_000],
        "stored": 20_000,
    }
    sync = CellResult(Cell("postgres", "skip-locked", "hashring", 2, "sync", 20_000, 20_000), metrics=metrics)
    fired, synced = table([burst, sync]).split("\n\n")
    assert "fires/s" in fired and "hashring" not in fired
    header, _, row = synced.splitlines()
    assert header.split()[:6] == ["store", "claim", "membership", "K", "sync", "jobs"]
    assert "7.50 (3.8x)" in row and "9.50 (4.8x)" in row and "9.00" in row
    assert " NO " in row and "0+20,000" in row and row.rstrip().endswith("ok")
    assert "fires/s" not in table([sync])


def test_a_sync_node_that_fails_fails_the_cell_with_its_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tickwork_bench import sync
    from tickwork_bench.progress import Progress
    from tickwork_bench.workloads import Settings

    def failing(config: Path) -> list[str]:
        return [sys.executable, "-c", "import sys; print('no store for you', file=sys.stderr); sys.exit(3)"]

    monkeypatch.setattr(sync, "_node_command", failing)
    scratch = SQLiteScratch()
    try:
        cell = Cell("sqlite", "optimistic", "single", 1, "sync", 20, 20)
        result = sync.run_sync_cell(1, cell, scratch, Settings(work_dir=tmp_path), Progress(1, enabled=False))
    finally:
        scratch.close()
    assert result.failed
    assert "sync-empty-1 exited with status 3\nno store for you" in result.errors
    assert any(e.startswith("after the empty round the store holds 0 schedules, expected 20") for e in result.errors)
    assert result.metrics["import_s"] > 0 and result.metrics["stored"] == 0


def test_tiny_sync_cells_on_mysql(mysql_server: MySQLServer, tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    status = cli.main(
        [
            "--store", "mysql",
            "--claim", "default",
            "--nodes", "2",
            "--membership", "all",
            "--workload", "sync",
            "--schedules", "100",
            "--mysql-url", mysql_server.url("mysql"),
            "--out", str(out),
            "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    (cell,) = doc["cells"]
    assert cell["errors"] == [], cell
    m = cell["metrics"]
    assert m["stored"] == 100
    # MySQL takes no sync lock (docs/deployment-sync.md): both nodes may have written the rows.
    assert sum(m["created_by_node"]) >= 100
    assert m["start_empty_s"] > 0 and m["start_unchanged_s"] > 0 and m["met"] in (True, False)


def test_rounds_repeat_every_group_in_alternating_order() -> None:
    plan = expand(
        stores=["postgres"],
        claims_by_store={"postgres": ["skip-locked"]},
        memberships=["all", "hashring"],
        nodes=[4],
        workloads=["burst"],
        burst_schedules=100,
        stored=0,
        steady_schedules=10,
        steady_seconds=2.0,
        raw=True,
        rounds=3,
    )
    order = [(c.round_no, c.claim, c.membership) for c in plan.cells]
    forward = [("raw", "-"), ("skip-locked", "all"), ("skip-locked", "hashring")]
    assert order == [(r, *cell) for r, cells in ((1, forward), (2, forward[::-1]), (3, forward)) for cell in cells]
    assert {c.rounds for c in plan.cells} == {3}
    assert len({c.key for c in plan.cells}) == 3
    assert plan.baseline == "all"
    assert plan.cells[0].label == "postgres/raw/-/K=4 burst round 1/3"


def test_one_membership_or_one_node_has_no_baseline() -> None:
    common: dict[str, Any] = dict(
        stores=["sqlite"],
        claims_by_store={"sqlite": ["optimistic"]},
        workloads=["burst"],
        burst_schedules=10,
        stored=0,
        steady_schedules=1,
        steady_seconds=1.0,
        raw=False,
    )
    assert expand(memberships=["all"], nodes=[1, 2], **common).baseline is None
    assert expand(memberships=["hashring", "all"], nodes=[1], **common).baseline is None
    assert expand(memberships=["single", "hashring", "all"], nodes=[2], **common).baseline == "hashring"


def _burst_result(claim: str, membership: str, round_no: int, fires_per_s: float, **metrics: Any) -> CellResult:
    cell = Cell("postgres", claim, membership, 4, "burst", 100, 100, round_no=round_no, rounds=3)
    return CellResult(cell, metrics={"fires": 100, "duplicates": 0, "fires_per_s": fires_per_s, **metrics})


def test_ratios_pair_cells_of_the_same_round_and_the_summary_gives_median_and_range() -> None:
    results = [
        _burst_result("raw", "-", 1, 1000.0),
        _burst_result("skip-locked", "all", 1, 500.0),
        _burst_result("skip-locked", "hashring", 1, 400.0),
        _burst_result("raw", "-", 2, 2000.0),
        _burst_result("skip-locked", "all", 2, 800.0),
        _burst_result("skip-locked", "hashring", 2, 1000.0),
        _burst_result("raw", "-", 3, 1500.0),
        _burst_result("skip-locked", "all", 3, 600.0),
        # A failed round: left out of the numbers, counted in the rounds column.
        _burst_result("skip-locked", "hashring", 3, 10.0, duplicates=1),
    ]
    attach_raw_ratios(results)
    attach_baseline_ratios(results, "all")
    assert [r.metrics.get("raw_ratio") for r in results[1:3]] == [2.0, 2.5]
    assert [r.metrics.get("baseline_ratio") for r in results[1:3]] == [None, 0.8]
    assert results[5].metrics["baseline_ratio"] == pytest.approx(1.25)

    summaries = {s.cell.membership: s for s in summarize(results)}
    assert set(summaries) == {"-", "all", "hashring"}
    hashring = summaries["hashring"]
    assert (hashring.rounds, hashring.failed, hashring.duplicates) == (3, 1, 1)
    assert hashring.spreads["fires_per_s"].values == (400.0, 1000.0)
    assert hashring.spreads["baseline_ratio"].median == pytest.approx(1.025)
    all_ = summaries["all"].spreads["raw_ratio"]
    assert (all_.median, all_.low, all_.high) == (2.5, 2.0, 2.5)

    # What --chart draws with several rounds: one result per cell, its medians.
    (chart_hashring,) = [r for r in median_results(list(summaries.values())) if r.cell.membership == "hashring"]
    assert chart_hashring.metrics["fires_per_s"] == 700.0 and chart_hashring.cell.rounds == 1

    text = summary_table(list(summaries.values()))
    header, _, *rows = text.splitlines()
    assert "vs all" in header and "fires/s" in header
    hashring_row = next(row for row in rows if " hashring " in row)
    assert "2/3" in hashring_row and "1 FAIL" in hashring_row
    assert "1.02 (0.80-1.25)" in hashring_row
    per_round = table(results).splitlines()
    assert per_round[0].startswith("round") and "vs all" in per_round[0]


def test_tiny_burst_in_two_rounds_compares_memberships(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    status = cli.main(
        [
            "--store", "sqlite",
            "--claim", "optimistic",
            "--nodes", "2",
            "--membership", "all,hashring",
            "--workload", "burst",
            "--schedules", "100",
            "--settle", "0.5",
            "--rounds", "2",
            "--out", str(out),
            "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    assert [(c["round_no"], c["claim"], c["membership"]) for c in doc["cells"]] == [
        (1, "raw", "-"),
        (1, "optimistic", "all"),
        (1, "optimistic", "hashring"),
        (2, "optimistic", "hashring"),
        (2, "optimistic", "all"),
        (2, "raw", "-"),
    ]
    for cell in doc["cells"]:
        assert cell["metrics"]["fires"] == 100 and cell["metrics"]["duplicates"] == 0, cell
    hashring = [c for c in doc["cells"] if c["membership"] == "hashring"]
    assert all(c["metrics"]["baseline_ratio"] > 0 and c["metrics"]["baseline"] == "all" for c in hashring)
    summary = {s["membership"]: s for s in doc["summary"]}
    assert set(summary) == {"-", "all", "hashring"}
    assert all(s["rounds"] == 2 and s["failed_rounds"] == 0 for s in summary.values())
    assert len(summary["hashring"]["metrics"]["baseline_ratio"]["values"]) == 2
    assert len(summary["all"]["metrics"]["raw_ratio"]["values"]) == 2
    speed = doc["machine"]["python_workload_ms"]
    assert speed["start_ms"] > 0 and speed["end_ms"] > 0


def _queue_exists(broker: str, name: str) -> bool:
    from kombu import Connection
    from kombu.exceptions import ChannelError

    with Connection(broker, connect_timeout=5) as conn:
        try:
            conn.channel().queue_declare(name, passive=True)
        except ChannelError:
            return False
    return True


def test_handoff_hands_a_minute_to_celery_workers_beside_celery_beat(
    postgres_server: PostgresServer, amqp_url: str, tmp_path: Path
) -> None:
    """``tickwork bench --workload handoff`` as a user runs it: 50 schedules due at one minute on one
    node with the celery executor, real workers, and one real Celery beat with the same 50
    crontab() entries; every fire ran exactly once, and the run's queues and database are gone."""
    import subprocess

    out = tmp_path / "handoff.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "tickwork.cli", "bench",
            "--workload", "handoff",
            "--executor", "celery",
            "--broker", amqp_url,
            "--schedules", "50",
            "--nodes", "1",
            "--beats", "1",
            "--worker-concurrency", "4",
            "--pg-url", postgres_server.url("postgres"),
            "--out", str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    assert doc["failed"] is False
    (cell,) = doc["cells"]
    assert cell["errors"] == [], cell
    assert (cell["workload"], cell["executor"], cell["nodes"], cell["beats"]) == ("handoff", "celery", 1, 1)
    tw = cell["tickwork"]
    assert tw["duplicates"] == 0, tw
    assert tw["handed_off"] == tw["ran"] == tw["executions"] == 50, tw
    # The worker-side integration recorded every outcome in tickwork's history.
    assert tw["history"] == {"succeeded": 50}, tw
    assert tw["handed_off_s"] is not None and tw["ran_s"] is not None
    assert tw["task_lag"]["p50_ms"] is not None
    beat = cell["beat"]
    assert beat["entries_sent"] + beat["entries_not_sent"] == 50
    assert beat["sent_in_minute"] == beat["entries_sent"] > 0
    assert set(beat["by_beat"]) == {"beat1"}
    # One beat sends each entry at most once a minute, and everything it sent ran.
    assert beat["duplicates"] == 0
    assert beat["executions"] == beat["sent_in_minute"]
    assert "handoff: 50 schedules" in done.stdout and "celery beat1: sent" in done.stdout
    for queue in cell["queues"].values():
        assert not _queue_exists(amqp_url, queue), queue
    (database,) = doc["databases"]
    with psycopg.connect(postgres_server.conninfo(postgres_server.maintenance_dbname), autocommit=True) as conn:
        left = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database["database"],)).fetchall()
    assert left == [], database


def test_beat_metrics_count_a_second_beat_as_duplicates_and_ignore_sends_after_the_minute() -> None:
    from tickwork_bench.handoffmetrics import beat_metrics, tickwork_metrics

    t0 = 1_000_000.0
    sends = [
        {"beat": "beat1", "task_id": "a1", "entry": "e1", "sent": t0 + 0.5},
        {"beat": "beat1", "task_id": "a2", "entry": "e2", "sent": t0 + 1.5},
        {"beat": "beat2", "task_id": "b1", "entry": "e1", "sent": t0 + 0.7},
        # Late: the next minute's business, not this minute's send.
        {"beat": "beat2", "task_id": "b2", "entry": "e2", "sent": t0 + 61.0},
    ]
    executions = [{"task_id": t, "entry": e, "at": t0 + 2} for t, e in (("a1", "e1"), ("a2", "e2"), ("b1", "e1"))]
    executions.append({"task_id": "b2", "entry": "e2", "at": t0 + 62})
    m = beat_metrics(schedules=3, beats=2, t0=t0, sends=sends, executions=executions)
    assert (m["sent_in_minute"], m["sent_after_minute"], m["entries_sent"], m["entries_not_sent"]) == (3, 1, 2, 1)
    assert (m["executions"], m["entries_run"], m["duplicates"], m["entries_run_twice_or_more"]) == (3, 2, 1, 1)
    assert m["by_beat"]["beat1"]["sent_in_minute"] == 2
    assert m["by_beat"]["beat2"]["sent_in_minute"] == 1
    assert m["send_lag"]["max_ms"] == pytest.approx(1500.0)

    fire = {"schedule": "s1", "scheduled_for": "2026-01-01T00:00:00+00:00"}
    twice = [{**fire, "task_id": "x", "at": t0 + 1}, {**fire, "task_id": "x", "at": t0 + 2}]
    tw = tickwork_metrics(
        schedules=1, t0=t0, handed_off_at=t0 + 0.5, executions=twice, statuses={"succeeded": 1}, history_duplicates=0
    )
    assert (tw["duplicates"], tw["ran"], tw["executions"], tw["handed_off"]) == (1, 1, 2, 1)
    assert tw["handed_off_s"] == pytest.approx(0.5) and tw["ran_s"] == pytest.approx(2.0)
    # A fire the nodes started past its misfire grace is skipped: not handed off, not a duplicate.
    late = tickwork_metrics(
        schedules=2,
        t0=t0,
        handed_off_at=t0 + 0.5,
        executions=twice[:1],
        statuses={"succeeded": 1, "skipped": 1},
        history_duplicates=0,
    )
    assert (late["handed_off"], late["skipped"], late["not_handed_off"], late["duplicates"]) == (1, 1, 1, 0)
    assert late["ran_per_s"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--executor", "rq", "--beats", "1", "--broker", "redis://127.0.0.1:6379/0"], "--beats"),
        (["--executor", "rq"], "RQ needs Redis"),
        (["--workload", "handoff,burst"], "runs alone"),
        (["--nodes", "1,2"], "one node count"),
        # Options of the other workloads are refused rather than ignored.
        (["--rounds", "2"], "--rounds: not supported by --workload handoff"),
        (["--profile", "/tmp/profiles"], "--profile: not supported by --workload handoff"),
        (["--metrics"], "--metrics: not supported by --workload handoff"),
        (["--stale-stats"], "--stale-stats: not supported by --workload handoff"),
    ],
)
def test_handoff_usage_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--workload", "handoff", "--no-progress", *args]
    if "--workload" in args:
        argv = ["--no-progress", *args]
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("executor", ["rq", "dramatiq"])
def test_handoff_to_rq_and_dramatiq_workers(
    executor: str, postgres_server: PostgresServer, redis_url: str, tmp_path: Path
) -> None:
    """The same workload with the rq and dramatiq executors over Redis (no beat): every fire
    handed off and run once by real workers, and the run's queue keys gone from Redis."""
    import redis

    out = tmp_path / "handoff.json"
    status = cli.main(
        [
            "--workload", "handoff",
            "--executor", executor,
            "--broker", redis_url,
            "--schedules", "20",
            "--worker-concurrency", "2",
            "--max-in-flight", "8",
            "--pg-url", postgres_server.url("postgres"),
            "--out", str(out),
            "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    assert doc["settings"]["max_in_flight"] == 8
    (cell,) = doc["cells"]
    assert cell["errors"] == [] and "beat" not in cell, cell
    # The nodes ran with it: no claim asked for more than the room 8 fires in flight leave.
    assert all(0 < n["asked"] <= 8 * n["claim_calls"] for n in cell["node_results"]), cell["node_results"]
    tw = cell["tickwork"]
    assert (tw["handed_off"], tw["ran"], tw["executions"], tw["duplicates"]) == (20, 20, 20, 0), tw
    # The nodes were stopped once the minute was handed off, not after the workers ran it all.
    assert cell["nodes_stopped_s"] is not None and cell["nodes_stopped_s"] >= tw["handed_off_s"], cell
    assert tw["history"] == {"succeeded": 20}, tw
    queue = cell["queues"]["tickwork"]
    connection = redis.Redis.from_url(redis_url)
    try:
        assert [k for k in connection.scan_iter(f"*{queue}*")] == []
    finally:
        connection.close()


def test_handoff_over_a_mysql_store(
    mysql_server: MySQLServer, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hand-off workload over MySQL/MariaDB: the bench's own reads of the run history are
    portable (no ``COUNT(*) FILTER``), and every fire is handed off and run once. Its nodes
    import what ``--node-import`` names (here the statement counter: it counted nothing before,
    the option was dropped on the way to the nodes)."""
    out, kinds = tmp_path / "handoff.json", tmp_path / "kinds"
    monkeypatch.setenv(statementkinds.ENV, str(kinds))
    status = cli.main(
        [
            "--workload", "handoff", "--executor", "rq", "--broker", redis_url, "--store", "mysql",
            "--schedules", "20", "--worker-concurrency", "2", "--mysql-url", mysql_server.url("mysql"),
            "--node-import", "tickwork_bench.statementkinds", "--out", str(out), "--no-progress",
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    assert doc["settings"]["node_imports"] == ["tickwork_bench.statementkinds"]
    (cell,) = doc["cells"]
    assert cell["errors"] == [] and cell["store"] == "mysql", cell
    tw = cell["tickwork"]
    assert (tw["handed_off"], tw["ran"], tw["executions"], tw["duplicates"]) == (20, 20, 20, 0), tw
    counted = statementkinds.summary(kinds)
    assert any(text.startswith("INSERT INTO tickwork_runs") for text in counted), sorted(counted)


def _is_node(process: psutil.Process) -> bool:
    try:
        return "tickwork_bench.nodeproc" in process.cmdline()
    except psutil.NoSuchProcess:
        return False


def test_sigterm_stops_a_run_as_ctrl_c_does_and_leaves_no_node_running(tmp_path: Path) -> None:
    # `kill` or a CI job's timeout: the bench must stop its node processes (each in a process
    # group of its own, so they do not get the signal) and report, not die and leave them firing.
    out = tmp_path / "results.json"
    bench = subprocess.Popen(
        [
            sys.executable, "-m", "tickwork_bench",
            "--store", "sqlite",
            "--claim", "optimistic",
            "--nodes", "2",
            "--membership", "hashring",
            "--workload", "steady",
            "--steady-schedules", "20",
            "--steady-seconds", "120",
            "--out", str(out),
            "--no-progress",
        ],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        nodes: list[psutil.Process] = []
        while len(nodes) < 2 and bench.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            nodes = [p for p in psutil.Process(bench.pid).children(recursive=True) if _is_node(p)]
        assert len(nodes) == 2, bench.communicate(timeout=10)[0] if bench.poll() is not None else "nodes not started"
        bench.send_signal(signal.SIGTERM)
        output, _ = bench.communicate(timeout=120)
    finally:
        if bench.poll() is None:
            bench.kill()
    # Reported as a run that measured nothing (exit status 1), not killed by the signal.
    assert bench.returncode == 1 and "only 0 of 1 cells were measured" in output, output
    _gone, alive = psutil.wait_procs(nodes, timeout=10)
    assert alive == [], [p.pid for p in alive]


def test_a_cell_that_fired_nothing_of_what_was_due_is_a_failure() -> None:
    from tickwork_bench.metrics import nothing_fired

    assert nothing_fired({"fires": 0, "expected": 10_000}) == "no fire ran of the 10,000 due: the nodes' logs say why"
    assert nothing_fired({"fires": 1, "expected": 10_000}) is None  # behind its load: measured, not failed
    assert nothing_fired({"fires": 0, "expected": 0}) is None
