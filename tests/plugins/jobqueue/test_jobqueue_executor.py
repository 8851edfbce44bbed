"""The jobqueue executor on its own: config validation, target checks, the enqueue rule under
concurrent submitters, bounded waits on a locked queue, and its lifecycle (real databases)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support import planted
from tests.support.jobqueue_helpers import Outcomes, call, queue_url_for, rows
from tickwork.config import parse
from tickwork.errors import ConfigError, ExecutorError
from tickwork.node import build_executors
from tickwork.plugin.manager import PluginManager
from tickwork.structures import JobCall, Outcome, RunStatus
from tickwork_jobqueue import plugin as jobqueue_plugin
from tickwork_jobqueue.executor import JobQueueExecutor
from tickwork_jobqueue.worker import Worker

JOBS = "tests.support.queue_jobs"


@pytest.fixture(params=["sqlite", "postgres"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return queue_url_for(request.param, request, tmp_path)


@pytest.fixture
def executor(queue_url: str) -> Iterator[JobQueueExecutor]:
    ex = JobQueueExecutor(queue_url)
    ex.start()
    yield ex
    ex.shutdown()


def test_an_isolated_manager_registers_it_from_the_module() -> None:
    manager = PluginManager(extra=[jobqueue_plugin], entry_points_enabled=False)
    assert manager.executors.names() == ["jobqueue"]
    assert manager.executors.get("jobqueue") is JobQueueExecutor


def test_the_docs_testing_example(tmp_path: Path) -> None:
    """The example of docs/plugins.md#testing-your-plugin, kept runnable here."""
    cls = PluginManager(extra=[jobqueue_plugin], entry_points_enabled=False).executors.get("jobqueue")
    executor = cls(url=f"sqlite:///{tmp_path / 'queue.db'}")
    executor.start()
    got: list[Outcome] = []
    done = threading.Semaphore(0)

    def on_done(outcome: Outcome) -> None:  # the fake: record, and let the test wait
        got.append(outcome)
        done.release()

    try:
        for run_id in (1, 2):
            job = JobCall(
                run_id=run_id,
                schedule="export",
                scheduled_for=datetime.now(UTC),
                target="app.jobs:export",
                arguments={},
                timeout=10.0,
            )
            executor.submit(job, on_done)
            assert done.acquire(timeout=10)
    finally:
        executor.shutdown()
    assert [o.status for o in got] == [RunStatus.SUCCEEDED, RunStatus.SKIPPED]
    assert got[1].error == "previous job of this schedule is still queued (id 1)"


# -- configuration ---------------------------------------------------------------------------------


def build(table: dict[str, Any]) -> JobQueueExecutor:
    config = parse({"scheduler": {"default_executor": "jobqueue"}, "executor": {"jobqueue": table}})
    executor = build_executors(config, PluginManager(extra=[jobqueue_plugin], entry_points_enabled=False))["jobqueue"]
    assert isinstance(executor, JobQueueExecutor)
    return executor


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"url": "sqlite:///q.db", "thread": 2},
            "executor.jobqueue.thread: unknown option (did you mean `threads`?); "
            "known options: allowed_modules, create_table, import_targets, threads, url",
        ),
        ({"url": "sqlite:///q.db", "threads": "4"}, "executor.jobqueue.threads: expected int, got str '4'"),
        (
            {"url": "sqlite:///q.db", "threads": 0},
            "executor.jobqueue.threads: must be an integer from 1 to 1000, got 0",
        ),
        ({}, 'executor.jobqueue.url: required, e.g. "sqlite:///jobs.db"'),
        (
            {"url": "mysql://db/jobs"},
            "executor.jobqueue: url: unsupported database 'mysql'; expected sqlite:///PATH or postgresql://...",
        ),
        (
            {"url": "sqlite://"},
            "executor.jobqueue: url: a SQLite queue needs a file shared with the workers, e.g. sqlite:///jobs.db",
        ),
        (
            {"url": "postgresql+asyncpg://db/jobs"},
            "executor.jobqueue: url: PostgreSQL driver 'asyncpg' is not supported; use postgresql+psycopg://",
        ),
        (
            {"url": "not a url"},
            "executor.jobqueue: url: the database URL contains whitespace or a control character",
        ),
        (
            {"url": "notaurl"},
            "executor.jobqueue: url: the database URL does not start with a scheme; "
            "expected sqlite:///PATH or postgresql://user:password@host/db",
        ),
        (
            # A one-character typo, after ${PW} was expanded: the password must not be echoed.
            {"url": f"postgresql:/app:{planted.PASSWORD}@db/app"},
            "executor.jobqueue.url: 'postgresql:' must be followed by '//' (e.g. sqlite:///jobs.db)",
        ),
        (
            {"url": f"postgresql://app:{planted.PASSWORD}@db:54x2/app"},
            "executor.jobqueue: url: the port of the database URL is not a number",
        ),
        (
            {"url": f"postgresql://app:{planted.PASSWORD}@x@db/app"},
            "executor.jobqueue: url: the user or password of the database URL holds an '@'; write it as %40",
        ),
    ],
)
def test_config_errors_name_the_table_and_option(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build(table)
    # Checked as the file is read ("<config>: ...") or, the URL's parts, as the executor is built ("<defaults>: ...").
    assert str(info.value).partition(": ")[2] == message


def test_accepted_urls_pin_the_driver_and_hide_the_password() -> None:
    for url in (
        "postgresql://u:s3cret@db/jobs",
        "postgres://u:s3cret@db/jobs",
        "postgresql+psycopg://u:s3cret@db/jobs",
    ):
        executor = build({"url": url, "threads": 3})
        assert executor.url.drivername == "postgresql+psycopg" and executor.threads == 3
        assert "s3cret" not in repr(executor) and "s3cret" not in str(executor.settings)
    assert build({"url": "sqlite:///q.db"}).url.drivername == "sqlite+pysqlite"


def test_a_missing_sqlite_directory_is_reported_at_start(tmp_path: Path) -> None:
    executor = JobQueueExecutor(f"sqlite:///{tmp_path / 'nowhere' / 'q.db'}")
    with pytest.raises(ConfigError, match=r"directory .*nowhere.* does not exist"):
        executor.start()


def test_create_table_false_requires_the_table(tmp_path: Path) -> None:
    executor = JobQueueExecutor(f"sqlite:///{tmp_path / 'q.db'}", create_table=False)
    with pytest.raises(ConfigError, match="no tickwork_jobqueue table"):
        executor.start()


# -- targets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["no_colon", "mod:", ":func", "a b:c", "mod:1x", "mod:f:g", "mod..x:f"])
def test_target_syntax_is_checked(target: str) -> None:
    executor = JobQueueExecutor("sqlite:///q.db")
    with pytest.raises(ExecutorError, match=r"must look like 'package\.module:function'"):
        executor.validate_target(target, {})


@pytest.mark.parametrize(
    ("target", "arguments", "message"),
    [
        (f"{JOBS}:missing", {}, "has no attribute 'missing'"),
        (f"{JOBS}:NOT_CALLABLE", {}, "is not callable (it is a int)"),
        (f"{JOBS}:append_line", {"path": "x"}, "no stored argument for required parameter(s): text"),
        (f"{JOBS}:append_line", {"path": "x", "text": {1, 2}}, "not JSON-serialisable"),
    ],
)
def test_importable_targets_are_checked(target: str, arguments: dict[str, Any], message: str) -> None:
    executor = JobQueueExecutor("sqlite:///q.db")
    with pytest.raises(ExecutorError) as info:
        executor.validate_target(target, arguments)
    assert message in str(info.value)


def test_a_target_taking_the_run_context_is_accepted() -> None:
    # Workers run it inside the enqueuing run's context (test_jobqueue.py checks what it receives).
    JobQueueExecutor("sqlite:///q.db").validate_target("tests.support.context_jobs:record", {"out": "x"})


def test_a_target_not_importable_here_is_accepted_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    executor = JobQueueExecutor("sqlite:///q.db")
    with caplog.at_level(logging.WARNING, "tickwork.jobqueue"):
        executor.validate_target("worker_only_package.tasks:reindex", {"full": True})
    assert "'worker_only_package.tasks:reindex' cannot be imported on this host" in caplog.text
    executor.validate_target(f"{JOBS}:append_line", {"path": "x", "text": "y", "_tickwork_mode": "process"})


def test_import_targets_false_checks_only_the_syntax(caplog: pytest.LogCaptureFixture) -> None:
    executor = JobQueueExecutor("sqlite:///q.db", import_targets=False)
    with caplog.at_level(logging.WARNING, "tickwork.jobqueue"):
        executor.validate_target(f"{JOBS}:missing", {})
        executor.validate_target("worker_only_package.tasks:reindex", {})
    assert caplog.text == ""
    with pytest.raises(ExecutorError, match="must look like"):
        executor.validate_target("reindex", {})


# -- enqueueing ------------------------------------------------------------------------------------


def test_submit_enqueues_then_skips_while_queued_or_running(executor: JobQueueExecutor, queue_url: str) -> None:
    first = Outcomes()
    executor.submit(call(1, "report", f"{JOBS}:fail", message="x"), first)
    (outcome,) = first.wait()
    assert outcome.status is RunStatus.SUCCEEDED and outcome.detail == "enqueued job 1"

    queued = Outcomes()
    executor.submit(call(2, "report", f"{JOBS}:fail", message="x"), queued)
    (outcome,) = queued.wait()
    assert outcome.status is RunStatus.SKIPPED
    assert outcome.error == "previous job of this schedule is still queued (id 1)"

    worker = Worker(queue_url, name="w")
    worker.open()
    try:
        job = worker.claim()
        assert job is not None and job.id == 1
        running = Outcomes()
        executor.submit(call(3, "report", f"{JOBS}:fail", message="x"), running)
        assert running.wait()[0].error == "previous job of this schedule is still running (id 1)"
        other = Outcomes()
        executor.submit(call(4, "other-schedule", f"{JOBS}:fail", message="x"), other)
        assert other.wait()[0].status is RunStatus.SUCCEEDED  # the rule is per schedule
        worker.execute(job)  # fails on purpose; a failed job no longer blocks
    finally:
        worker.close()
    again = Outcomes()
    executor.submit(call(5, "report", f"{JOBS}:fail", message="x"), again)
    assert again.wait()[0].status is RunStatus.SUCCEEDED
    assert [(r["run_id"], r["state"]) for r in rows(queue_url)] == [(1, "failed"), (4, "queued"), (5, "queued")]


def test_racing_submitters_enqueue_one_job(queue_url: str) -> None:
    """Two executors (two nodes) submit the same schedule from 8 threads at once: one job."""
    executors = [JobQueueExecutor(queue_url, threads=4) for _ in range(2)]
    for ex in executors:
        ex.start()
    outcomes = Outcomes()
    barrier = threading.Barrier(8)

    def submit(i: int) -> None:
        barrier.wait()
        executors[i % 2].submit(call(100 + i, "contended", f"{JOBS}:fail", message="x"), outcomes)

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = outcomes.wait(8)
    finally:
        for ex in executors:
            ex.shutdown()
    statuses = sorted(o.status.value for o in got)
    assert statuses == ["skipped"] * 7 + ["succeeded"], got
    (job,) = rows(queue_url)
    assert job["state"] == "queued"


class QueueLock:
    """Holds, from another connection, a lock that blocks every enqueue until :meth:`release`."""

    def __init__(self, url: str) -> None:
        self._sqlite: sqlite3.Connection | None = None
        self._pg: psycopg.Connection[Any] | None = None
        if url.startswith("sqlite"):
            self._sqlite = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
            self._sqlite.execute("BEGIN IMMEDIATE")
        else:
            self._pg = psycopg.connect(url)
            self._pg.execute("LOCK TABLE tickwork_jobqueue IN EXCLUSIVE MODE")

    def release(self) -> None:
        if self._sqlite is not None:
            self._sqlite.execute("ROLLBACK")
            self._sqlite.close()
        if self._pg is not None:
            self._pg.rollback()
            self._pg.close()


def test_a_locked_queue_times_out_within_the_run_timeout_and_enqueues_nothing(
    executor: JobQueueExecutor, queue_url: str
) -> None:
    lock = QueueLock(queue_url)
    try:
        outcomes = Outcomes()
        executor.submit(call(1, "report", f"{JOBS}:fail", timeout=0.3, message="x"), outcomes)
        (outcome,) = outcomes.wait()
    finally:
        lock.release()
    assert outcome.status is RunStatus.TIMED_OUT
    assert (outcome.error or "").startswith("not enqueued:") and "timeout of 0.3s" in (outcome.error or "")
    assert rows(queue_url) == []  # the transaction was rolled back
    later = Outcomes()
    executor.submit(call(2, "report", f"{JOBS}:fail", timeout=0.3, message="x"), later)
    assert later.wait()[0].status is RunStatus.SUCCEEDED


def test_lifecycle_errors_and_shutdown_reports_every_call_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    executor = JobQueueExecutor(url, threads=1)
    with pytest.raises(ExecutorError, match="submit\\(\\) called before start\\(\\)"):
        executor.submit(call(1, "a", f"{JOBS}:fail", message="x"), Outcomes())
    executor.start()
    with pytest.raises(ExecutorError, match="start\\(\\) called while running"):
        executor.start()
    # Block the single thread on a held write lock, queue three more calls behind it, then drop them.
    holder = sqlite3.connect(tmp_path / "q.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    outcomes = [Outcomes() for _ in range(4)]
    for i, on_done in enumerate(outcomes):
        executor.submit(call(i + 1, f"s{i}", f"{JOBS}:fail", timeout=10, message="x"), on_done)
    executor.shutdown(wait=False)
    for on_done in outcomes[1:]:
        (outcome,) = on_done.wait()
        assert (
            outcome.status is RunStatus.FAILED
            and outcome.error == "not enqueued: the jobqueue executor shut down first"
        )
    holder.execute("ROLLBACK")
    holder.close()
    (first,) = outcomes[0].wait()
    assert first.status is RunStatus.SUCCEEDED  # it had started: it completes
    after = Outcomes()
    executor.submit(call(9, "late", f"{JOBS}:fail", message="x"), after)
    (outcome,) = after.items  # reported at once, from the submitting thread
    assert outcome.status is RunStatus.FAILED and outcome.error == "not enqueued: the jobqueue executor is shut down"
    assert all(len(o.items) == 1 for o in outcomes)
