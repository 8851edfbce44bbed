"""Registers the ``celery`` executor (entry point ``celery = "tickwork_celery.plugin"``).

Celery is optional (``tickwork[celery]``): without it the name is still registered, by a class
that fails with the install command as soon as a config or a schedule uses it.
"""

from __future__ import annotations

from tickwork.abc import Executor
from tickwork.plugin import Deferred, Registry, hookimpl
from tickwork_handoff.unavailable import installed, unavailable

from .settings import CelerySettings


def executor_class() -> type[Executor]:
    try:
        if not installed("celery", "kombu"):
            raise ModuleNotFoundError("the client library is not installed", name="celery")
        from .executor import CeleryExecutor
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] not in ("celery", "kombu"):
            raise
        return unavailable("celery", "the celery executor needs Celery: pip install 'tickwork[celery]'", CelerySettings)
    return CeleryExecutor


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    """Register the ``celery`` executor."""
    registry.add("celery", Deferred(executor_class, section=CelerySettings))
