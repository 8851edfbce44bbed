"""Registers the ``jobqueue`` executor (entry point ``jobqueue = "tickwork_jobqueue.plugin"``)."""

from __future__ import annotations

from tickwork.abc import Executor
from tickwork.plugin import Deferred, Registry, hookimpl

from .settings import JobQueueSettings


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    """Register the ``jobqueue`` executor."""
    registry.add("jobqueue", Deferred("tickwork_jobqueue.executor:JobQueueExecutor", section=JobQueueSettings))
