"""Running the hand-off tests: tickwork nodes and queue workers as real processes, and reading
what they did (the workers' own log, tickwork's history)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

import tickwork
from tests.support.paths import REPO
from tickwork.abc import Store
from tickwork.sql.schema import runs, schedules
from tickwork.sql.store import SQLStore
from tickwork.structures import RunStatus

BIN = Path(sys.executable).parent
#: The Celery app of the hand-off tests (with the worker side).
APP = "tests.support.handoff.celery_app"


@dataclass(frozen=True)
class Run:
    """One history row."""

    id: int
    schedule: str
    scheduled_for: datetime
    attempt: int
    status: RunStatus
    error: str | None
    node: str | None


def queue_name() -> str:
    """A queue of the test's own on a broker other sessions may share."""
    return f"tickwork-test-{uuid.uuid4().hex[:12]}"


def write_config(path: Path, store: dict[str, str], node_id: str, executor: str, table: dict[str, Any]) -> Path:
    """A node configuration: PostgreSQL or SQLite store, the hashring, one hand-off executor."""
    store_lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in store.items())
    exec_lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    path.write_text(
        textwrap.dedent(
            f"""
            [scheduler]
            node_id = "{node_id}"
            hard_timeout_grace = 3
            reap_interval = 1
            renew_interval = 1
            [membership]
            plugin = "hashring"
            heartbeat_interval = 1.0
            node_ttl = 4.0
            """
        )
        + f"[store]\n{store_lines}[executor.{executor}]\n{exec_lines}"
    )
    return path


def env_for(config: Path, log: Path, **extra: str) -> dict[str, str]:
    # The checkout's src/ and plugins/ first: a process started from a second worktree runs that
    # worktree's code, not the one the virtualenv's editable install points to.
    path = os.pathsep.join(str(p) for p in (REPO, REPO / "src", REPO / "plugins"))
    return dict(os.environ, TICKWORK_CONFIG=str(config), HANDOFF_LOG=str(log), PYTHONPATH=path, **extra)


def start(argv: Sequence[str], env: dict[str, str], out: Path) -> subprocess.Popen[bytes]:
    """A process in a session of its own (so a kill reaches a worker's children too)."""
    with out.open("ab") as sink:
        return subprocess.Popen(
            list(argv), cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )


def start_node(config: Path, seconds: float, env: dict[str, str], out: Path) -> subprocess.Popen[bytes]:
    return start(
        [sys.executable, "-m", "tickwork.cli", "run", "--config", str(config), "--for", f"{seconds:.1f}"], env, out
    )


def kill(process: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGKILL) -> None:
    """Signal the process's whole session (a worker and its pool children)."""
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return
    process.wait(timeout=30)


def stop(process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """Warm shutdown (SIGTERM), then SIGKILL."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(process)


def executions(log: Path) -> list[dict[str, Any]]:
    """What the tasks recorded (tests/support/handoff/jobs.py), one dict per line."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def history(store: Store) -> list[Run]:
    assert isinstance(store, SQLStore)
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(
                runs.c.id,
                schedules.c.name,
                runs.c.scheduled_for,
                runs.c.attempt,
                runs.c.status,
                runs.c.error,
                runs.c.node,
            )
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .order_by(runs.c.id)
        ).all()
    return [Run(r.id, r.name, r.scheduled_for, r.attempt, RunStatus(r.status), r.error, r.node) for r in rows]


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.2)


def admin(config: Path) -> tickwork.Admin:
    return tickwork.connect(config)


def tails(paths: Sequence[Path], chars: int = 3000) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-chars:]}" for p in paths if p.exists())


def celery_worker(queue: str, env: dict[str, str], out: Path, *, pool: str = "threads", concurrency: int = 6,
                  name: str = "w1", app: str = APP) -> subprocess.Popen[bytes]:  # fmt: skip
    """``celery -A tests.support.handoff.celery_app worker`` (or ``app``) on ``queue``, started as a
    user starts it; returns once it is ready to consume. Its node name holds the queue's: two tests'
    workers of the same name would share (and fight over) one remote-control queue on the broker."""
    before = out.read_text(errors="replace").count("ready.") if out.exists() else 0
    process = start(
        [str(BIN / "celery"), "-A", app, "worker", "-Q", queue, "-P", pool,
         "-c", str(concurrency), "-n", f"{name}-{queue}@%h", "--without-gossip", "--without-mingle",
         "--loglevel=INFO"],
        env,
        out,
    )  # fmt: skip
    wait_until(
        lambda: process.poll() is not None or out.read_text(errors="replace").count("ready.") > before,
        60,
        "the celery worker to be ready",
    )
    assert process.poll() is None, tails([out])
    return process


def settled(store: Store, timeout: float = 45.0) -> list[Run]:
    """The history once no run is in progress or handed off without an outcome."""
    open_ = {RunStatus.RUNNING, RunStatus.SUBMITTED, RunStatus.STARTED}

    def still_open() -> list[Run]:
        return [r for r in history(store) if r.status in open_]

    try:
        wait_until(lambda: not still_open(), timeout, "every hand-off to end")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; still open: {still_open()}") from None
    return history(store)


def rq_worker(
    url: str,
    queue: str,
    env: dict[str, str],
    out: Path,
    name: str,
    worker_class: str = "Worker",
    *options: str,
    restart: bool = False,
) -> subprocess.Popen[bytes]:
    """``rq worker`` with tickwork's worker and job classes (and ``options``, more of ``rq worker``'s
    own), as a user starts it; returns once it listens. With ``restart``, started again whenever
    it exits, as supervisord or systemd (``Restart=always``) run RQ's workers: RQ's worker quits
    when its own connection to Redis fails outside a dequeue (its heartbeat after a job)."""
    argv = [str(BIN / "rq"), "worker", "-u", url, "-w", f"tickwork_rq.worker.{worker_class}",
            "-j", "tickwork_rq.worker.Job", "-n", f"{name}-{queue}", *options, queue]  # fmt: skip
    if restart:
        argv = ["/bin/sh", "-c", 'while :; do "$@"; sleep 1; done', "sh", *argv]
    process = start(argv, env, out)
    wait_until(
        lambda: process.poll() is not None or "Listening on" in out.read_text(errors="replace"),
        60,
        "the rq worker to listen",
    )
    assert process.poll() is None, tails([out])
    return process


def dramatiq_worker(queue: str, env: dict[str, str], out: Path) -> subprocess.Popen[bytes]:
    """``dramatiq tests.support.handoff.dramatiq_app`` on ``queue``, as a user starts it; returns once its
    worker process booted."""
    process = start(
        [
            str(BIN / "dramatiq"),
            "tests.support.handoff.dramatiq_app",
            "--processes",
            "1",
            "--threads",
            "4",
            "--queues",
            queue,
        ],
        dict(env, HANDOFF_QUEUE=queue),
        out,
    )
    wait_until(
        lambda: process.poll() is not None or "is ready for action" in out.read_text(errors="replace"),
        60,
        "the dramatiq worker to boot",
    )
    assert process.poll() is None, tails([out])
    return process
