"""The local executor's process mode with real child processes: results, exceptions, and a soft
timeout that really kills the child."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.local_helpers import Recorder, alive, job_call, read_pids, run, wait_gone
from tickwork.structures import RunStatus
from tickwork_local.executor import LocalExecutor


@pytest.fixture
def process_executor() -> Iterator[LocalExecutor]:
    executor = LocalExecutor(mode="process", max_workers=2)
    executor.start()
    yield executor
    executor.shutdown(wait=False)


@pytest.fixture
def thread_executor() -> Iterator[LocalExecutor]:
    executor = LocalExecutor(max_workers=2)
    executor.start()
    yield executor
    executor.shutdown(wait=False)


def test_process_mode_runs_the_function_in_a_child(process_executor: LocalExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    outcome = run(process_executor, "write_pid", path=str(pid_file))
    assert outcome.status is RunStatus.SUCCEEDED and outcome.error is None
    (pid,) = read_pids(pid_file)
    assert pid != os.getpid()
    assert wait_gone(pid), "the child outlived its run"


def test_a_schedule_can_ask_for_process_mode(thread_executor: LocalExecutor, tmp_path: Path) -> None:
    in_thread, in_child = tmp_path / "thread", tmp_path / "child"
    assert run(thread_executor, "write_pid", path=str(in_thread)).status is RunStatus.SUCCEEDED
    assert read_pids(in_thread) == [os.getpid()]
    outcome = run(thread_executor, "write_pid", path=str(in_child), _tickwork_mode="process")
    assert outcome.status is RunStatus.SUCCEEDED
    (pid,) = read_pids(in_child)
    assert pid != os.getpid()


def test_async_functions_run_in_the_child_too(process_executor: LocalExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    assert run(process_executor, "async_write_pid", path=str(pid_file)).status is RunStatus.SUCCEEDED
    assert read_pids(pid_file) != [os.getpid()]


def test_an_exception_is_recorded_with_its_traceback(process_executor: LocalExecutor) -> None:
    outcome = run(process_executor, "fail", message="the child failed on purpose")
    assert outcome.status is RunStatus.FAILED
    error = outcome.error or ""
    assert error.startswith("ValueError: the child failed on purpose\nTraceback (most recent call last):")
    assert "local_jobs.py" in error and "raise ValueError(message)" in error


def test_a_child_that_dies_without_reporting_fails_the_run(process_executor: LocalExecutor) -> None:
    outcome = run(process_executor, "exit_abruptly")
    assert outcome.status is RunStatus.FAILED
    assert outcome.error == "child process ended without reporting"


def test_a_soft_timeout_really_kills_the_child(process_executor: LocalExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    recorder = Recorder()
    # The timeout only has to outlast the child's start-up (it writes its pid first thing).
    process_executor.submit(job_call("write_pid_then_sleep", timeout=1.5, path=str(pid_file)), recorder)
    (pid,) = read_pids(pid_file)
    assert pid != os.getpid()
    outcome = recorder.wait()
    assert outcome.status is RunStatus.TIMED_OUT
    assert outcome.error == "soft timeout after 1.5s; child process killed"
    assert wait_gone(pid), f"child {pid} still exists after its timed_out outcome"
    assert len(recorder.outcomes) == 1


def test_a_soft_timeout_also_kills_what_the_child_started(process_executor: LocalExecutor, tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    recorder = Recorder()
    # The timeout counts from the submit, so it must outlast the child's start on a loaded machine
    # (1.5 s once did not: killed before it wrote its pids, CI).
    process_executor.submit(job_call("spawn_then_sleep", timeout=6.0, path=str(pid_file)), recorder)
    child, grandchild = read_pids(pid_file, count=2)
    try:
        assert recorder.wait().status is RunStatus.TIMED_OUT
        assert wait_gone(child)
        assert wait_gone(grandchild, timeout=1.0), f"grandchild {grandchild} survived the timeout"
    finally:
        if alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_shutdown_reports_every_process_call_once(tmp_path: Path) -> None:
    executor = LocalExecutor(mode="process", max_workers=1)
    executor.start()
    running, waiting = Recorder(), Recorder()
    executor.submit(job_call("write_pid_then_sleep", run_id=1, path=str(tmp_path / "pid")), running)
    executor.submit(job_call("write_pid", run_id=2, path=str(tmp_path / "never")), waiting)
    (pid,) = read_pids(tmp_path / "pid")
    executor.shutdown(wait=False)
    assert wait_gone(pid), "shutdown did not kill the running child"
    assert running.wait().status is not RunStatus.SUCCEEDED
    assert waiting.wait(timeout=1).status is RunStatus.FAILED
    assert len(running.outcomes) == len(waiting.outcomes) == 1
