"""tickwork.current_run() and RunContext parameters inside real runs of an embedded node: thread,
asyncio and process mode, a retry, a declared job; each equals its history row."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import tickwork
from tests.support import context_jobs
from tickwork.scheduling.sync import add
from tickwork.structures import RunRecord, RunStatus, ScheduleSpec

# Guards against a hung node; not timing assertions.
WAIT_S = 30


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tickwork.Node]:
    node = tickwork.Node.from_config(
        {"store": {"path": str(tmp_path / "ctx.db")}},
        node_id="ctx-node",
        jobs=["tests.support.context_jobs"],
        lookahead=0,
    )
    with node:
        yield node


def lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def wait_for(predicate: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def history_by_id(node: tickwork.Node) -> dict[int, RunRecord]:
    return {r.id: r for r in node.store.history(limit=1000)}


def assert_matches_history(recorded: dict[str, object], row: RunRecord) -> None:
    assert recorded["schedule"] == row.schedule
    assert datetime.fromisoformat(str(recorded["scheduled_for"])) == row.scheduled_for
    assert recorded["attempt"] == row.attempt
    assert recorded["node_id"] == row.node == "ctx-node"


@pytest.mark.parametrize(
    ("target", "mode"),
    [
        ("tests.support.context_jobs:record", "thread"),
        ("tests.support.context_jobs:record_without_parameter", "thread"),
        ("tests.support.context_jobs:record_async", "thread"),
        ("tests.support.context_jobs:record", "process"),
        ("tests.support.context_jobs:record_async", "process"),
    ],
)
def test_current_run_equals_the_history_row(node: tickwork.Node, tmp_path: Path, target: str, mode: str) -> None:
    out = tmp_path / "runs.jsonl"
    add(
        node.store,
        ScheduleSpec("ctx", "interval", "1s", target, arguments={"out": str(out), "_tickwork_mode": mode}),
    )
    wait_for(lambda: any(r.status is RunStatus.SUCCEEDED for r in node.store.history(schedule="ctx")), "a run")
    runs = history_by_id(node)
    for line in lines(out):
        current = line["current"]
        assert isinstance(current, dict)
        row = runs[int(current["run_id"])]
        assert_matches_history(current, row)
        if line["param"] is not None:
            assert line["param"] == current
    if mode == "process":
        assert all(line["pid"] != os.getpid() for line in lines(out))


def test_a_retry_sees_attempt_two(node: tickwork.Node, tmp_path: Path) -> None:
    out = tmp_path / "retry.jsonl"
    spec = ScheduleSpec(
        "flaky",
        "interval",
        "3s",
        "tests.support.context_jobs:fail_then_record",
        arguments={"out": str(out)},
        retries=1,
        retry_backoff=timedelta(seconds=0.2),
    )
    add(node.store, spec)
    wait_for(lambda: any(r.attempt == 2 for r in node.store.history(schedule="flaky")), "a retry")
    wait_for(lambda: len(lines(out)) >= 2, "the retry to run")
    runs = history_by_id(node)
    first, second = (line["current"] for line in lines(out)[:2])
    assert isinstance(first, dict) and isinstance(second, dict)
    assert (first["attempt"], second["attempt"]) == (1, 2)
    assert first["scheduled_for"] == second["scheduled_for"]
    assert runs[int(first["run_id"])].status is RunStatus.FAILED
    for recorded in (first, second):
        assert_matches_history(recorded, runs[int(recorded["run_id"])])


def test_a_declared_job_receives_its_run_context(node: tickwork.Node) -> None:
    context_jobs.DECLARED_OUT.clear()
    wait_for(lambda: context_jobs.DECLARED_OUT, "the declared job")
    recorded = json.loads(context_jobs.DECLARED_OUT[0])
    assert_matches_history(recorded, history_by_id(node)[recorded["run_id"]])
    assert recorded["schedule"] == "declared-with-context"


def test_a_declared_job_may_take_no_other_parameter() -> None:
    with pytest.raises(tickwork.DeclarationError, match=r"one annotated tickwork.RunContext.*\(run, extra\)"):

        @tickwork.every("1s")
        def two(run: tickwork.RunContext, extra: int) -> None: ...

    with pytest.raises(tickwork.DeclarationError, match=r"takes \(count\)"):

        @tickwork.every("1s")
        def not_a_context(count: int) -> None: ...


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_a_failed_run_is_an_error_record_with_its_traceback(
    node: tickwork.Node, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    caplog.set_level("INFO", "tickwork.runs")
    add(
        node.store,
        ScheduleSpec(
            "boom", "interval", "1s", "tests.support.context_jobs:explode", arguments={"_tickwork_mode": mode}
        ),
    )
    wait_for(lambda: [r for r in caplog.records if r.levelname == "ERROR" and "boom" in r.getMessage()], "an error")
    record = next(r for r in caplog.records if r.levelname == "ERROR" and "boom" in r.getMessage())
    assert record.name == "tickwork.runs"
    text = caplog.text
    assert "ValueError: the job exploded on purpose" in text
    assert 'raise ValueError("the job exploded on purpose")' in text  # the traceback, not just the message
    assert (record.exc_info is not None) == (mode == "thread")  # exc_info when it raised in this process
    assert record.__dict__["schedule"] == "boom" and record.__dict__["node"] == "ctx-node"
