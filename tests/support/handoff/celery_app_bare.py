"""A Celery application WITHOUT the worker side (``tickwork_celery.worker.install(app)`` is not
called), as a team following a guide that forgot it runs its workers: the tasks run, nothing
reports to tickwork. The broker is ``$HANDOFF_BROKER``."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery

from tests.support.handoff import jobs

app = Celery("handoff_bare", broker=os.environ.get("HANDOFF_BROKER", "memory://"))
app.conf.update(
    task_ignore_result=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@app.task(name="handoff.work", bind=True)
def work(self: Any, n: int = 0) -> None:
    jobs.record_plain(n)
