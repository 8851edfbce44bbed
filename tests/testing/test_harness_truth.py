"""The harness tells the truth: every job shape the README and docs show (plain, current_run(),
a ``RunContext`` parameter, ``async def`` with and without one, failing, past its timeout) ends
the same way under ``SchedulerHarness`` as on a real node, and the job body really runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

import tickwork
from tests.support.paths import REPO
from tickwork.testing import SchedulerHarness

MODULE = "tests.support.harness_shapes"
START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def summary(error: str | None) -> str | None:
    """The first line of a recorded error: the exception, without frames that differ by thread."""
    return None if error is None else error.splitlines()[0]


def node_outcomes(tmp_path: Path, out: Path) -> dict[str, set[tuple[str, str | None]]]:
    config = tmp_path / "tickwork.toml"
    db = tmp_path / "node.db"
    config.write_text(
        textwrap.dedent(
            f"""
            [scheduler]
            jobs = ["{MODULE}"]
            [store]
            plugin = "sqlite"
            path = "{db}"
            """
        )
    )
    subprocess.run(
        [sys.executable, "-m", "tickwork.cli", "run", "--config", str(config), "--for", "5"],
        cwd=REPO,
        env=dict(os.environ, SHAPES_OUT=str(out)),
        check=True,
        capture_output=True,
    )
    with tickwork.connect({"store": {"plugin": "sqlite", "path": str(db)}}) as admin:
        rows = admin.history(limit=1000)
    outcomes: dict[str, set[tuple[str, str | None]]] = {}
    for row in rows:
        if row.status in ("succeeded", "failed", "timed_out"):
            outcomes.setdefault(row.schedule, set()).add((row.status, summary(row.error)))
    return outcomes


def harness_outcomes(out: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, set[tuple[str, str | None]]]:
    monkeypatch.setenv("SHAPES_OUT", str(out))
    with SchedulerHarness(jobs=[MODULE], start=START) as harness:
        runs = harness.advance(4)
    outcomes: dict[str, set[tuple[str, str | None]]] = {}
    for run in runs:
        outcomes.setdefault(run.schedule, set()).add((run.status.value, summary(run.error)))
    return outcomes


def seen(out: Path) -> set[str]:
    return set(out.read_text().splitlines())


def test_every_job_shape_ends_the_same_on_a_node_and_under_the_harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_node = node_outcomes(tmp_path, tmp_path / "node.out")
    under_harness = harness_outcomes(tmp_path / "harness.out", monkeypatch)
    assert under_harness == on_node
    assert under_harness["shape.context"] == {("succeeded", None)}
    assert under_harness["shape.async"] == {("succeeded", None)}
    assert under_harness["shape.fails"] == {("failed", "ValueError: the export server said no")}
    assert under_harness["shape.async_fails"] == {("failed", "KeyError: 'missing'")}
    assert {status for status, _ in under_harness["shape.slow"]} == {"timed_out"}
    assert {status for status, _ in under_harness["shape.async_slow"]} == {"timed_out"}
    # What the bodies saw is the same too, and every body ran (an async body included).
    assert seen(tmp_path / "harness.out") == seen(tmp_path / "node.out")
    assert "async schedule=shape.async" in seen(tmp_path / "harness.out")
    assert "context schedule=shape.context attempt=1" in seen(tmp_path / "harness.out")
    assert "async_slow never" not in seen(tmp_path / "harness.out")


def test_the_harness_keeps_what_sync_and_async_jobs_returned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHAPES_OUT", str(tmp_path / "out"))
    with SchedulerHarness(jobs=[MODULE], start=START) as harness:
        runs = harness.advance(1)
    results = Counter((r.schedule, r.result) for r in runs if r.result is not None)
    assert results == Counter({("shape.current_run", "shape.current_run"): 1, ("shape.async", "report"): 1})
