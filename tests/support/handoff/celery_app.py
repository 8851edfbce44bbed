"""The Celery application of the hand-off tests: ``celery -A tests.support.handoff.celery_app worker``.

The broker is ``$HANDOFF_BROKER``; the worker reads tickwork's database from ``$TICKWORK_CONFIG``.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery

from tests.support.handoff import jobs
from tickwork_celery.worker import install

app = Celery("handoff_tests", broker=os.environ.get("HANDOFF_BROKER", "memory://"))
app.conf.update(
    task_ignore_result=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
install(app)


@app.task(name="handoff.work", bind=True)
def work(self: Any, n: int = 0) -> None:
    request = self.request
    jobs.record(
        request.id,
        n=n,
        periodic_task_name=getattr(request, "periodic_task_name", None),
        # What Celery's protocol 2 says of the message (tests of the executor's message builder).
        root_id=request.root_id,
        parent_id=request.parent_id,
        origin=request.origin,
        expires=request.expires,
        ignore_result=request.ignore_result,
    )


@app.task(name="handoff.boom", bind=True)
def boom(self: Any) -> None:
    jobs.record(self.request.id)
    raise jobs.Boom("the task failed on purpose")


@app.task(name="handoff.slow", bind=True, acks_late=True)
def slow(self: Any, seconds: float = 3.0) -> None:
    jobs.slow(self.request.id, seconds)


@app.task(name="handoff.flaky", bind=True)
def flaky(self: Any) -> None:
    """Fails its first delivery and asks Celery to retry it at once; the retry succeeds."""
    jobs.record(self.request.id, retries=self.request.retries)
    if self.request.retries == 0:
        raise self.retry(countdown=0, max_retries=1, exc=jobs.Boom("first delivery fails"))


@app.task(name="handoff.beat_work")
def beat_work(n: int = 0) -> None:
    """What Celery beat fires in benchmarks/handoff_vs_beat.py (no tickwork run around it)."""
    jobs.record_plain(n)
