"""Driving the local executor directly: a fake ``on_done`` that counts calls, and process checks."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tickwork.structures import JobCall, Outcome
from tickwork_local.executor import LocalExecutor

JOBS = "tests.support.local_jobs"
# Guards against a hang; not timing assertions.
WAIT_S = 20.0


class Recorder:
    """A fake ``on_done`` recording every call, so tests can check it happened exactly once."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self._cond = threading.Condition()

    def __call__(self, outcome: Outcome) -> None:
        with self._cond:
            self.outcomes.append(outcome)
            self._cond.notify_all()

    def wait(self, timeout: float = WAIT_S) -> Outcome:
        with self._cond:
            assert self._cond.wait_for(lambda: self.outcomes, timeout), "on_done was never called"
            return self.outcomes[0]


def job_call(function: str, timeout: float = 10.0, run_id: int = 1, **arguments: Any) -> JobCall:
    return JobCall(
        run_id=run_id,
        schedule=function,
        scheduled_for=datetime(2026, 1, 1, tzinfo=UTC),
        target=f"{JOBS}:{function}",
        arguments=arguments,
        timeout=timeout,
    )


def run(executor: LocalExecutor, function: str, timeout: float = 10.0, **arguments: Any) -> Outcome:
    """Submit one call and wait for its outcome."""
    recorder = Recorder()
    executor.submit(job_call(function, timeout, **arguments), recorder)
    return recorder.wait()


def read_pids(path: Path, count: int = 1, timeout: float = WAIT_S) -> list[int]:
    """Wait for a job to write ``count`` pids into ``path`` and return them."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            pids = [int(p) for p in path.read_text().split()]
        except (FileNotFoundError, ValueError):
            pids = []
        if len(pids) == count:
            return pids
        assert time.monotonic() < deadline, f"no pid in {path}: the job never started"
        time.sleep(0.01)


def alive(pid: int) -> bool:
    """Whether ``pid`` names a process that has not exited (a zombie counts as exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):  # gone meanwhile (a read of its stat can say ESRCH)
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    """Wait up to ``timeout`` s for ``pid`` to exit; return whether it did."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def allowed_modules_config(tmp_path: Path, package: str) -> Path:
    """A SQLite configuration whose local executor runs only targets inside ``package``."""
    config = tmp_path / "tickwork.toml"
    config.write_text(
        f'[store]\npath = "{tmp_path / "tickwork.db"}"\n[executor.local]\nallowed_modules = ["{package}."]\n'
    )
    return config
