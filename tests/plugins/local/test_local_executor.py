"""The local executor in thread mode: target validation, the bounded pool, and ``on_done`` called
exactly once when a soft timeout and the run's end race."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import local_jobs
from tests.support.local_helpers import JOBS, WAIT_S, Recorder, job_call
from tickwork.errors import ConfigError, ExecutorError
from tickwork.structures import RunStatus
from tickwork_local.executor import LocalExecutor


@pytest.fixture(autouse=True)
def _open_gate() -> Iterator[None]:
    local_jobs.reset_probe()
    yield
    local_jobs.gate.set()  # never leave a pool thread blocked


@pytest.mark.parametrize(
    ("target", "arguments", "message"),
    [
        ("no_colon", {}, "cannot resolve target 'no_colon': reference must look like 'package.module:function'"),
        (
            "tests.support.no_such_module:f",
            {},
            "cannot resolve target 'tests.support.no_such_module:f': No module named 'tests.support.no_such_module'",
        ),
        (f"{JOBS}:missing", {}, f"cannot resolve target '{JOBS}:missing': module '{JOBS}' has no attribute 'missing'"),
        (f"{JOBS}:NOT_CALLABLE", {}, f"target '{JOBS}:NOT_CALLABLE' is not callable"),
        (f"{JOBS}:needs", {"days": 2}, f"target '{JOBS}:needs': no stored argument for required parameter(s): city"),
        (f"{JOBS}:needs", {"city": "Oslo", "_tickwork_mode": "fork"}, "argument _tickwork_mode: 'fork' is not one of"),
    ],
)
def test_validate_target_errors_name_the_problem(target: str, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ExecutorError) as info:
        LocalExecutor().validate_target(target, arguments)
    assert str(info.value).startswith(message)


def test_validate_target_accepts_a_callable_with_its_arguments() -> None:
    executor = LocalExecutor()
    executor.validate_target(f"{JOBS}:needs", {"city": "Oslo"})
    executor.validate_target(f"{JOBS}:needs", {"city": "Oslo", "days": 2, "_tickwork_mode": "process"})


def test_validate_target_refuses_arguments_the_callable_does_not_take() -> None:
    # Dropped silently at every run before; a typo'd key is refused when the schedule is added.
    with pytest.raises(ExecutorError, match=r"it does not accept unused \(it accepts: city, days\)"):
        LocalExecutor().validate_target(f"{JOBS}:needs", {"city": "Oslo", "unused": True})


def test_a_builtin_without_a_readable_signature_runs_without_arguments() -> None:
    # inspect.signature raises for some C built-ins (time.time); adding one crashed `jobs add`.
    executor = LocalExecutor()
    executor.validate_target("time:time", {})
    with pytest.raises(ExecutorError, match=r"it does not accept a \(it accepts: no arguments\)"):
        executor.validate_target("time:time", {"a": 1})
    executor.start()
    try:
        recorder = Recorder()
        executor.submit(dataclasses.replace(job_call("now"), target="time:time"), recorder)
        outcome = recorder.wait()
    finally:
        executor.shutdown()
    assert outcome.status is RunStatus.SUCCEEDED, outcome.error


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_workers": 0}, "executor.local.max_workers: must be an integer from 1 to 10000, got 0"),
        ({"mode": "fork"}, "executor.local.mode: 'fork' is not one of thread, process"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        LocalExecutor(**options)
    assert str(info.value) == message


def test_the_thread_pool_runs_at_most_max_workers_calls_at_once() -> None:
    executor = LocalExecutor(max_workers=2)
    executor.start()
    recorders = [Recorder() for _ in range(6)]
    try:
        for i, recorder in enumerate(recorders):
            executor.submit(job_call("gated", run_id=i), recorder)
        deadline = time.monotonic() + WAIT_S
        while local_jobs.active < 2:
            assert time.monotonic() < deadline, f"only {local_jobs.active} call(s) started"
            time.sleep(0.01)
        time.sleep(0.2)  # room for a third call to start, were the pool unbounded
        assert local_jobs.active == 2
        local_jobs.gate.set()
        assert [r.wait().status for r in recorders] == [RunStatus.SUCCEEDED] * 6
    finally:
        executor.shutdown(wait=True)
    assert local_jobs.max_active == 2


def test_on_done_is_called_once_when_timeout_and_completion_race() -> None:
    """Every call both completes and reaches its deadline; each must be reported exactly once.

    Calls take as long as their timeout, so the first eight race the deadline; the rest wait for a
    thread past their deadline, then still run to completion (threads cannot be cancelled)."""
    executor = LocalExecutor(max_workers=8)
    executor.start()
    recorders = [Recorder() for _ in range(40)]
    try:
        for i, recorder in enumerate(recorders):
            executor.submit(job_call("sleep_for", timeout=0.05, run_id=i, seconds=0.05), recorder)
        statuses = [r.wait().status for r in recorders]
    finally:
        executor.shutdown(wait=True)  # every completion has now reported (or been refused)
    time.sleep(0.1)
    assert [len(r.outcomes) for r in recorders] == [1] * 40
    assert set(statuses) <= {RunStatus.SUCCEEDED, RunStatus.TIMED_OUT}
    assert RunStatus.TIMED_OUT in statuses


def test_a_late_result_does_not_replace_the_timed_out_outcome() -> None:
    executor = LocalExecutor(max_workers=1)
    executor.start()
    recorder = Recorder()
    try:
        executor.submit(job_call("sleep_for", timeout=0.1, seconds=0.3), recorder)
        outcome = recorder.wait()
        assert outcome.status is RunStatus.TIMED_OUT and "threads cannot be killed" in (outcome.error or "")
    finally:
        executor.shutdown(wait=True)  # the function has returned
    assert len(recorder.outcomes) == 1


def test_a_call_timed_out_before_it_started_never_runs(tmp_path: Path) -> None:
    executor = LocalExecutor(max_workers=1)
    executor.start()
    blocker, queued = Recorder(), Recorder()
    try:
        executor.submit(job_call("gated", run_id=1), blocker)
        executor.submit(job_call("write_pid", timeout=0.1, run_id=2, path=str(tmp_path / "pid")), queued)
        assert queued.wait().status is RunStatus.TIMED_OUT
        local_jobs.gate.set()
        blocker.wait()
    finally:
        executor.shutdown(wait=True)
    assert not (tmp_path / "pid").exists(), "the timed-out call ran after its outcome was reported"
