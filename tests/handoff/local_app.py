"""Celery applications without a worker, for the executor's own tests: ``memory`` publishes into
this process (every publish succeeds) and ``unreachable`` points at a closed port (every publish
fails)."""

from __future__ import annotations

from celery import Celery

from tests.servers.base import free_port

memory = Celery("handoff_memory", broker="memory://")
unreachable = Celery("handoff_unreachable", broker=f"redis://127.0.0.1:{free_port()}/0")
unreachable.conf.broker_connection_timeout = 1.0
