"""``--node-import tickwork_bench.statementkinds``: each node of a real bench run counts its
statements by kind, and the summary adds the nodes' counts up to the bench's own count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tickwork_bench import cli
from tickwork_bench.statementkinds import ENV, kind, summary


def test_a_kind_folds_lists_of_parameters_and_whitespace() -> None:
    folded = kind("SELECT a FROM t\n  WHERE id IN (%s, %s, %s) AND x = %s")
    assert folded == "SELECT a FROM t WHERE id IN (...) AND x = %s"
    assert kind("INSERT INTO t (a, b) VALUES (?, ?), (?, ?), (?, ?)") == "INSERT INTO t (a, b) VALUES (...), ..."
    assert kind("SELECT 1 WHERE id IN (?)") == "SELECT 1 WHERE id IN (?)"


def test_a_tiny_run_counts_every_statement_of_every_node_by_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = tmp_path / "kinds"
    monkeypatch.setenv(ENV, str(kinds))
    out = tmp_path / "results.json"
    status = cli.main(
        [
            "--store", "sqlite", "--claim", "optimistic", "--nodes", "1", "--workload", "steady",
            "--steady-schedules", "20", "--steady-seconds", "2", "--no-raw", "--no-progress",
            "--node-import", "tickwork_bench.statementkinds", "--out", str(out),
        ]
    )  # fmt: skip
    doc = json.loads(out.read_text())
    assert status == 0, doc
    (cell,) = doc["cells"]
    files = list(kinds.glob("*.json"))
    assert len(files) == 1  # one node
    counted = summary(kinds)
    assert any(text.startswith("UPDATE tickwork_schedules") for text in counted)
    # Counted from the same ready line on as the bench's own count; the node's shutdown
    # statements come after the bench's count was taken.
    assert sum(counted.values()) >= cell["node_results"][0]["db_statements"] > 0
    done = subprocess.run(
        [sys.executable, "-m", "tickwork_bench.statementkinds", str(kinds), "--fires", "40", "--top", "3"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{sum(counted.values())} statements") and len(lines) == 4
