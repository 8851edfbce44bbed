"""Registers the ``http`` executor with tickwork.

httpx is an optional dependency (``tickwork[http]``). Without it the name ``http`` is still
registered, by a class that fails with the install command as soon as a config or schedule uses
it, so nodes that do not need HTTP keep working and those that do get a clear error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tickwork.abc import Executor
from tickwork.errors import ConfigError
from tickwork.plugin import Deferred, Registry, hookimpl
from tickwork.structures import JobCall, Outcome

from .settings import HTTPSettings

_INSTALL_HINT = "the http executor needs httpx, which is not installed: pip install 'tickwork[http]'"


class HTTPExecutorUnavailable(Executor):
    """Registered as ``http`` when httpx is missing; every use raises a ConfigError saying so."""

    section = HTTPSettings

    def __init__(self, **options: Any) -> None:
        raise ConfigError(_INSTALL_HINT)

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        raise ConfigError(_INSTALL_HINT)

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        raise ConfigError(_INSTALL_HINT)

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Nothing to stop: an instance can never be created."""


def executor_class() -> type[Executor]:
    """:class:`~tickwork_http.executor.HTTPExecutor`, or the stand-in when httpx is missing."""
    try:
        from .executor import HTTPExecutor
    except ModuleNotFoundError as exc:
        if exc.name != "httpx":
            raise
        return HTTPExecutorUnavailable
    return HTTPExecutor


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    """Register the ``http`` executor."""
    registry.add("http", Deferred(executor_class, section=HTTPSettings))
