"""Registers the ``rq`` executor (entry point ``rq = "tickwork_rq.plugin"``).

RQ is optional (``tickwork[rq]``): without it the name is still registered, by a class that fails
with the install command as soon as a config or a schedule uses it.
"""

from __future__ import annotations

from tickwork.abc import Executor
from tickwork.plugin import Deferred, Registry, hookimpl
from tickwork_handoff.unavailable import installed, unavailable

from .settings import RQSettings


def executor_class() -> type[Executor]:
    try:
        if not installed("rq", "redis"):
            raise ModuleNotFoundError("the client library is not installed", name="rq")
        from .executor import RQExecutor
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] not in ("rq", "redis"):
            raise
        return unavailable("rq", "the rq executor needs RQ: pip install 'tickwork[rq]'", RQSettings)
    return RQExecutor


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    """Register the ``rq`` executor."""
    registry.add("rq", Deferred(executor_class, section=RQSettings))
