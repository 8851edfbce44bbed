"""Shared helpers of the jobqueue tests: queue URLs per backend, reading the table, running workers."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from tests.support import planted
from tests.support.paths import REPO as ROOT
from tickwork.structures import JobCall, Outcome
from tickwork_jobqueue.database import create_queue_engine, parse_url
from tickwork_jobqueue.schema import jobs

# Guards against a hung worker process; not a timing assertion.
PROCESS_TIMEOUT_S = 60


def queue_url_for(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A queue URL on SQLite (a file in ``tmp_path``) or on a fresh PostgreSQL database.

    The PostgreSQL one is given as plain ``postgresql://``, the form users write.
    """
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'queue.db'}"
    url: str = planted.with_password(request.getfixturevalue("postgres_url"))
    return "postgresql://" + url.split("://", 1)[1]


def rows(url: str) -> list[dict[str, Any]]:
    """Every row of the queue table, oldest first."""
    engine = create_queue_engine(parse_url(url))
    try:
        with engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(select(jobs).order_by(jobs.c.id))]
    finally:
        engine.dispose()


def call(run_id: int, schedule: str, target: str, timeout: float = 10.0, **arguments: Any) -> JobCall:
    return JobCall(
        run_id=run_id,
        schedule=schedule,
        scheduled_for=datetime(2026, 1, 1, tzinfo=UTC),
        target=target,
        arguments=arguments,
        timeout=timeout,
    )


class Outcomes:
    """A fake ``on_done``: collects outcomes and lets a test wait for them."""

    def __init__(self) -> None:
        self.items: list[Outcome] = []
        self._cond = threading.Condition()

    def __call__(self, outcome: Outcome) -> None:
        with self._cond:
            self.items.append(outcome)
            self._cond.notify_all()

    def wait(self, count: int = 1, timeout: float = 10.0) -> list[Outcome]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.items) >= count, timeout), f"got {self.items}"
            return list(self.items)


def worker_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tickwork_jobqueue.worker", *args]


def worker_env(**extra: str) -> dict[str, str]:
    """The environment of a worker process: job modules under tests/ importable from the repo root."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run_worker(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m tickwork_jobqueue.worker ARGS`` as a real process and wait for it."""
    return subprocess.run(
        worker_command(*args),
        cwd=ROOT,
        env=worker_env(**env),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
