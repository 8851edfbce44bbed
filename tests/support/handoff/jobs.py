"""What the hand-off tests' tasks do, whichever queue runs them: append one line per execution to
``$HANDOFF_LOG`` (message id, schedule, fire time, attempt, pid), so a test can count executions
by the worker's own record, independently of tickwork's history."""

from __future__ import annotations

import json
import os
import time

import tickwork


def record(message_id: str, **extra: object) -> None:
    run = tickwork.current_run()
    line = {
        "message_id": message_id,
        "schedule": run.schedule,
        "scheduled_for": run.scheduled_for.isoformat(),
        "attempt": run.attempt,
        "run_id": run.run_id,
        "pid": os.getpid(),
        "at": time.time(),
        **extra,
    }
    # One write of one line in append mode: lines of concurrent processes do not interleave.
    with open(os.environ["HANDOFF_LOG"], "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def slow(message_id: str, seconds: float) -> None:
    record(message_id, phase="start")
    time.sleep(seconds)
    record(message_id, phase="end")


class Boom(RuntimeError):
    """What a failing task raises: its name must appear in tickwork's history."""


def record_plain(n: int) -> None:
    """One line per execution of a task not sent by tickwork (Celery beat's, for comparison)."""
    with open(os.environ["HANDOFF_LOG"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"n": n, "pid": os.getpid(), "at": time.time()}) + "\n")
