"""Registers the ``dramatiq`` executor (entry point ``dramatiq = "tickwork_dramatiq.plugin"``).

Dramatiq is optional (``tickwork[dramatiq]``): without it the name is still registered, by a class
that fails with the install command as soon as a config or a schedule uses it.
"""

from __future__ import annotations

from tickwork.abc import Executor
from tickwork.plugin import Deferred, Registry, hookimpl
from tickwork_handoff.unavailable import unavailable

from .settings import DramatiqSettings


def executor_class() -> type[Executor]:
    try:
        from .executor import DramatiqExecutor
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "dramatiq":
            raise
        return unavailable(
            "dramatiq", "the dramatiq executor needs Dramatiq: pip install 'tickwork[dramatiq]'", DramatiqSettings
        )
    return DramatiqExecutor


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    """Register the ``dramatiq`` executor."""
    registry.add("dramatiq", Deferred(executor_class, section=DramatiqSettings))
