"""Celery applications without a worker, for the executor's own tests: ``memory`` publishes into
this process (every publish succeeds), ``unreachable`` points at a closed port (every publish
fails) and ``configurable`` has the broker a test sets (``configurable.conf.broker_url``)."""

from __future__ import annotations

from celery import Celery

import tickwork
from tests.support.servers.base import free_port

memory = Celery("handoff_memory", broker="memory://")
unreachable = Celery("handoff_unreachable", broker=f"redis://127.0.0.1:{free_port()}/0")
unreachable.conf.broker_connection_timeout = 1.0
configurable = Celery("handoff_configurable")


@memory.task(name="handoff.declared")
@tickwork.cron("0 3 * * *", executor="celery")
def declared() -> None:
    """Declared for tickwork under Celery's decorator, as docs/handoff.md shows."""
