"""``LocalExecutor.cancel`` (``overlap = "cancel_other"``): a process-mode run's child (and what
it started) is killed, an asyncio run's task is cancelled, each reported ``cancelled`` once; a
thread cannot be stopped and ends as it would have."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support import local_jobs, overlap_jobs
from tests.support.local_helpers import Recorder, alive, job_call, read_pids, wait_gone
from tickwork.structures import JobCall, RunStatus
from tickwork_local.executor import LocalExecutor

REASON = "cancelled: the next fire came due (test)"


@pytest.fixture
def executor() -> Iterator[LocalExecutor]:
    ex = LocalExecutor(max_workers=2)
    ex.start()
    yield ex
    ex.shutdown(wait=False)


def test_a_process_run_is_killed_with_what_it_started_and_reported_cancelled(
    executor: LocalExecutor, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    recorder = Recorder()
    executor.submit(job_call("spawn_then_sleep", 60, run_id=5, path=str(pids), _tickwork_mode="process"), recorder)
    child, grandchild = read_pids(pids, count=2)
    assert executor.cancel(5, REASON)
    outcome = recorder.wait()
    assert outcome.status is RunStatus.CANCELLED and outcome.error == REASON
    assert wait_gone(child) and wait_gone(grandchild), "the run's processes outlived its cancel"
    assert not executor.cancel(5, REASON)  # ended: nothing to stop
    # Reported once: the child's own end (killed) is not reported after the cancel.
    executor.submit(job_call("write_pid", run_id=6, path=str(tmp_path / "next"), _tickwork_mode="process"), Recorder())
    read_pids(tmp_path / "next")
    assert len(recorder.outcomes) == 1


def test_an_asyncio_run_is_cancelled_inside_its_coroutine(executor: LocalExecutor) -> None:
    overlap_jobs.cancelled.clear()
    started = datetime(2026, 1, 1, tzinfo=UTC)
    call = JobCall(
        run_id=9,
        schedule="a",
        scheduled_for=started,
        target="tests.support.overlap_jobs:busy_async",
        arguments={"seconds": 60},
        timeout=120,
    )
    recorder = Recorder()
    executor.submit(call, recorder)
    assert executor.cancel(9, REASON)
    outcome = recorder.wait()
    assert outcome.status is RunStatus.CANCELLED and outcome.error == REASON
    # The coroutine itself saw the cancellation (not only the report).
    deadline = threading.Event()
    for _ in range(200):
        if overlap_jobs.cancelled:
            break
        deadline.wait(0.02)
    assert overlap_jobs.cancelled == [started.isoformat()]
    assert len(recorder.outcomes) == 1


def test_a_thread_cannot_be_stopped_and_ends_as_it_would_have(executor: LocalExecutor) -> None:
    local_jobs.gate.clear()
    recorder = Recorder()
    executor.submit(job_call("gated", run_id=3), recorder)
    assert not executor.cancel(3, REASON)
    local_jobs.gate.set()
    assert recorder.wait().status is RunStatus.SUCCEEDED


def test_an_unknown_or_ended_run_is_not_cancelled(executor: LocalExecutor, tmp_path: Path) -> None:
    assert not executor.cancel(12345, REASON)
    recorder = Recorder()
    executor.submit(replace(job_call("write_pid", run_id=4, path=str(tmp_path / "p")), timeout=10.0), recorder)
    assert recorder.wait().status is RunStatus.SUCCEEDED
    assert not executor.cancel(4, REASON)


def test_a_process_run_cancelled_before_its_child_started_never_starts(tmp_path: Path) -> None:
    one = LocalExecutor(max_workers=1, mode="process")
    one.start()
    try:
        first, second = Recorder(), Recorder()
        pids = tmp_path / "first"
        one.submit(job_call("write_pid_then_sleep", 60, run_id=1, path=str(pids)), first)
        (busy,) = read_pids(pids)
        # The only worker is busy: the second run waits for it, and is cancelled meanwhile.
        one.submit(job_call("write_pid", run_id=2, path=str(tmp_path / "second")), second)
        assert one.cancel(2, REASON)
        assert second.wait().status is RunStatus.CANCELLED
        assert one.cancel(1, REASON) and first.wait().status is RunStatus.CANCELLED
        assert wait_gone(busy)
        one.submit(job_call("write_pid", run_id=3, path=str(tmp_path / "third")), Recorder())
        read_pids(tmp_path / "third")  # the worker went on to the next run...
        assert not (tmp_path / "second").exists()  # ...and never started the cancelled one
        assert not alive(busy)
    finally:
        one.shutdown(wait=False)
