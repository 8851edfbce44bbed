"""The jobqueue plugin end to end: found through its entry point, built by a real Node from its
config table; fires enqueue jobs, a pending job makes the next fire skip (the Docspell rule), and a
worker process runs the job. The queue runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.support.jobqueue_helpers import queue_url_for, rows, run_worker
from tests.support.stores import T0
from tickwork import schedules as admin
from tickwork.config import Config, PluginChoice, SchedulerConfig
from tickwork.engine import Engine
from tickwork.errors import PluginNotFoundError
from tickwork.node import Node
from tickwork.plugin.manager import PluginManager
from tickwork.sql.store import SQLStore
from tickwork.structures import RunRecord, RunStatus, ScheduleSpec
from tickwork.testing import FakeClock
from tickwork_jobqueue.executor import JobQueueExecutor

TARGET = "tests.support.queue_jobs:append_line"


def test_the_plugin_is_discovered_through_its_entry_point() -> None:
    (ep,) = [ep for ep in entry_points(group="tickwork") if ep.name == "jobqueue"]
    assert ep.value == "tickwork_jobqueue.plugin"
    manager = PluginManager()
    assert "jobqueue" in manager.plugin_names
    assert manager.executors.get("jobqueue") is JobQueueExecutor
    assert manager.executors.owner("jobqueue") == "jobqueue"


def test_blocking_the_plugin_removes_the_executor() -> None:
    manager = PluginManager(block=["jobqueue"])
    with pytest.raises(PluginNotFoundError, match="unknown executor plugin 'jobqueue'"):
        manager.executors.get("jobqueue")
    assert "local" in manager.executors  # only the blocked plugin is gone


@pytest.fixture(params=["sqlite", "postgres"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return queue_url_for(request.param, request, tmp_path)


@pytest.fixture
def node(queue_url: str, sqlite_store: SQLStore, clock: FakeClock) -> Iterator[Node]:
    """A node built from a config whose ``[executor.jobqueue]`` table points at the queue."""
    config = Config(
        scheduler=SchedulerConfig(node_id="n1", reap_interval=3600.0),
        store=PluginChoice("sqlite", {}),
        executors={"jobqueue": {"url": queue_url}},
    )
    n = Node(config, store=sqlite_store, clock=clock)
    n.open()
    yield n
    n.shutdown()


def step(engine: Engine) -> None:
    """One tick, then wait for what it handed to executors to end and be recorded."""
    while engine.tick():
        pass
    engine.drain(10)
    assert not engine.in_flight, "a run did not end"


def history(store: SQLStore) -> list[RunRecord]:
    return sorted(store.history(limit=100), key=lambda r: r.id)


def test_fire_enqueues_skips_while_pending_and_enqueues_again_after_the_worker(
    node: Node, queue_url: str, sqlite_store: SQLStore, clock: FakeClock, tmp_path: Path
) -> None:
    out = tmp_path / "out.txt"
    spec = ScheduleSpec(
        name="nightly-export",
        trigger_kind="cron",
        expression="* * * * *",
        executor="jobqueue",
        target=TARGET,
        arguments={"path": str(out), "text": "exported"},
    )
    assert isinstance(node.executors["jobqueue"], JobQueueExecutor)
    node.executors["jobqueue"].validate_target(spec.target, spec.arguments)
    admin.add(sqlite_store, spec)

    # 1. The fire enqueues a job; the scheduler does not run it.
    clock.advance(60)
    step(node.engine)
    (first,) = history(sqlite_store)
    assert first.status is RunStatus.SUCCEEDED and first.scheduled_for == T0 + timedelta(minutes=1)
    (job,) = rows(queue_url)
    assert job["state"] == "queued" and job["run_id"] == first.id and job["schedule"] == "nightly-export"
    assert job["target"] == TARGET and job["arguments"] == {"path": str(out), "text": "exported"}
    assert job["scheduled_for"] == T0 + timedelta(minutes=1)
    assert job["started_at"] is None and job["worker"] is None
    assert not out.exists()

    # 2. The next fire, while that job is still queued, is recorded skipped and enqueues nothing.
    clock.advance(60)
    step(node.engine)
    second = history(sqlite_store)[1]
    assert second.status is RunStatus.SKIPPED
    assert second.error == f"previous job of this schedule is still queued (id {job['id']})"
    assert len(rows(queue_url)) == 1

    # 3. A worker process runs it and marks it done.
    result = run_worker("--url", queue_url, "--once", "--name", "w-e2e")
    assert result.returncode == 0, result.stderr
    (job,) = rows(queue_url)
    assert job["state"] == "done" and job["worker"] == "w-e2e" and job["error"] is None
    assert job["enqueued_at"] <= job["started_at"] <= job["finished_at"]
    (line,) = out.read_text().splitlines()
    text, pid = line.split()
    assert text == "exported" and int(pid) != os.getpid()  # ran in the worker, not here
    assert "job 1 (nightly-export): done" in result.stderr

    # 4. With nothing pending, the next fire enqueues again.
    clock.advance(60)
    step(node.engine)
    third = history(sqlite_store)[2]
    assert third.status is RunStatus.SUCCEEDED
    queued = rows(queue_url)
    assert [r["state"] for r in queued] == ["done", "queued"]
    assert queued[1]["run_id"] == third.id and queued[1]["scheduled_for"] == T0 + timedelta(minutes=3)


def test_workers_run_jobs_in_the_run_context_of_the_run_that_enqueued_them(
    node: Node, queue_url: str, sqlite_store: SQLStore, clock: FakeClock, tmp_path: Path
) -> None:
    out = tmp_path / "context.jsonl"
    for name, target in (
        ("ctx-sync", "tests.support.context_jobs:record"),
        ("ctx-async", "tests.support.context_jobs:record_async"),
    ):
        spec = ScheduleSpec(
            name=name,
            trigger_kind="cron",
            expression="* * * * *",
            executor="jobqueue",
            target=target,
            arguments={"out": str(out)},
        )
        node.executors["jobqueue"].validate_target(spec.target, spec.arguments)
        admin.add(sqlite_store, spec)
    clock.advance(60)
    step(node.engine)
    enqueued = {r.schedule: r for r in history(sqlite_store)}
    assert {r.status for r in enqueued.values()} == {RunStatus.SUCCEEDED}

    result = run_worker("--url", queue_url, "--once", "--name", "w-ctx")
    assert result.returncode == 0, result.stderr
    assert [r["state"] for r in rows(queue_url)] == ["done", "done"], rows(queue_url)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert line["pid"] != os.getpid()  # ran in the worker process
        # What current_run() returned and what the RunContext parameter received: the same run.
        assert line["current"] == line["param"]
        run = enqueued[line["current"]["schedule"]]
        assert line["current"] == {
            "schedule": run.schedule,
            "scheduled_for": (T0 + timedelta(minutes=1)).isoformat(),
            "run_id": run.id,
            "attempt": 1,
            "node_id": "n1",
        }
    assert {line["current"]["schedule"] for line in lines} == {"ctx-sync", "ctx-async"}
