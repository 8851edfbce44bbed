"""The Celery application of ``tickwork bench --workload handoff``.

``celery -A tickwork_bench.handoffapp worker`` runs both tasks: ``tickwork_bench.fire`` (what the
tickwork nodes hand off; the worker-side integration records its outcome in tickwork's history)
and ``tickwork_bench.beat_entry`` (what Celery beat sends, :mod:`tickwork_bench.beatapp`). The
broker is ``$TICKWORK_BENCH_BROKER``; the worker reads tickwork's database from
``$TICKWORK_CONFIG``.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery

from tickwork_celery.worker import install

from .handoffjobs import BROKER_ENV, record_entry, record_fire

FIRE_TASK = "tickwork_bench.fire"
BEAT_TASK = "tickwork_bench.beat_entry"

app = Celery("tickwork_bench", broker=os.environ.get(BROKER_ENV, "memory://"))
app.conf.update(
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
install(app)


@app.task(name=FIRE_TASK, bind=True)  # type: ignore[untyped-decorator]
def fire(self: Any) -> None:
    record_fire(str(self.request.id))


@app.task(name=BEAT_TASK, bind=True)  # type: ignore[untyped-decorator]
def beat_entry(self: Any, entry: str = "") -> None:
    record_entry(str(self.request.id), entry)
