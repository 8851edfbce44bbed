"""Celery beat for ``tickwork bench --workload handoff``: ``celery -A tickwork_bench.beatapp beat
-S tickwork_bench.beatapp:MarkedScheduler``.

The application of :mod:`tickwork_bench.handoffapp` with ``$TICKWORK_BENCH_ENTRIES`` entries in
``beat_schedule``, each ``crontab()`` (every minute) sending ``tickwork_bench.beat_entry`` to the
queue ``$TICKWORK_BENCH_QUEUE``. Beat itself is unchanged; two observers are added: every message
it publishes is appended to ``$TICKWORK_BENCH_SENDS`` (entry, task id, time), and the scheduler
writes ``$TICKWORK_BENCH_READY`` once it has set its schedule up (so the harness knows which
minute boundary beat fires first).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from celery import signals
from celery.beat import PersistentScheduler
from celery.schedules import crontab

from .handoffapp import BEAT_TASK, app
from .handoffjobs import QUEUE_ENV

ENTRIES_ENV = "TICKWORK_BENCH_ENTRIES"
SENDS_ENV = "TICKWORK_BENCH_SENDS"
READY_ENV = "TICKWORK_BENCH_READY"
BEAT_ENV = "TICKWORK_BENCH_BEAT"


def entry_name(i: int) -> str:
    return f"entry-{i:06d}"


app.conf.beat_schedule = {
    entry_name(i): {
        "task": BEAT_TASK,
        "schedule": crontab(),
        "kwargs": {"entry": entry_name(i)},
        "options": {"queue": os.environ.get(QUEUE_ENV, "celery")},
    }
    for i in range(int(os.environ.get(ENTRIES_ENV, "0")))
}


@signals.after_task_publish.connect  # type: ignore[untyped-decorator]
def _sent(sender: str | None = None, body: Any = None, headers: dict[str, Any] | None = None, **_: Any) -> None:
    if sender != BEAT_TASK or headers is None:
        return
    # Message protocol 2: the body is (args, kwargs, embed).
    kwargs = body[1] if isinstance(body, list | tuple) and len(body) > 1 else {}
    line = {
        "beat": os.environ.get(BEAT_ENV, "beat"),
        "task_id": headers.get("id"),
        "entry": kwargs.get("entry"),
        "sent": time.time(),
    }
    with open(os.environ[SENDS_ENV], "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


class MarkedScheduler(PersistentScheduler):  # type: ignore[misc]
    """Celery's default scheduler, which says when its schedule is set up."""

    def setup_schedule(self) -> None:
        super().setup_schedule()
        ready = os.environ.get(READY_ENV)
        if ready:
            Path(ready).write_text(json.dumps({"at": time.time()}))
