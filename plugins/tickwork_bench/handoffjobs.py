"""What the hand-off workload's tasks do on the queue's workers, whichever queue runs them: append
one line per execution to ``$TICKWORK_BENCH_LOG`` (the harness's own record of what ran, next to
tickwork's history), so executions are counted by task id and by fire from the workers' side."""

from __future__ import annotations

import json
import os
import time

import tickwork

#: Environment variables the harness sets for the nodes, the workers and the beats.
LOG_ENV = "TICKWORK_BENCH_LOG"
BROKER_ENV = "TICKWORK_BENCH_BROKER"
QUEUE_ENV = "TICKWORK_BENCH_QUEUE"


def _append(line: dict[str, object]) -> None:
    # One write of one line in append mode: lines of concurrent threads and processes do not
    # interleave.
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def record_fire(task_id: str) -> None:
    """A task tickwork handed off: its fire, as the worker-side integration hands it to the task."""
    run = tickwork.current_run()
    _append(
        {
            "kind": "tickwork",
            "task_id": task_id,
            "schedule": run.schedule,
            "scheduled_for": run.scheduled_for.isoformat(),
            "at": time.time(),
        }
    )


def record_entry(task_id: str, entry: str) -> None:
    """A task Celery beat sent for its entry ``entry`` (beat passes no fire time)."""
    _append({"kind": "beat", "task_id": task_id, "entry": entry, "at": time.time()})
