"""The stand-in registered under a hand-off executor's name when its client library is missing."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from typing import Any

from tickwork.abc import Executor
from tickwork.config import Section
from tickwork.errors import ConfigError
from tickwork.structures import JobCall, Outcome


def unavailable(name: str, hint: str, options: type[Section]) -> type[Executor]:
    """An executor class named for ``name`` whose every use raises a ConfigError saying ``hint``.
    Its :attr:`~tickwork.abc.Executor.section` is still ``options`` (the real executor's, which
    its settings module declares without the client library), so a configuration naming it is
    checked (``tickwork config check``) and documented all the same."""

    class Unavailable(Executor):
        section = options

        def __init__(self, **options: Any) -> None:
            raise ConfigError(hint)

        def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
            raise ConfigError(hint)

        def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
            raise ConfigError(hint)

        def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
            """Nothing to stop: an instance can never be created."""

    Unavailable.__name__ = Unavailable.__qualname__ = f"{name.capitalize()}ExecutorUnavailable"
    return Unavailable


def installed(*modules: str) -> bool:
    """Whether every one of ``modules`` (top-level names) can be imported, asked without importing
    it: the executors import their client library when they start, so a command that never starts
    one does not pay for the import."""
    # An imported module is asked no more: kombu and celery replace theirs with lazy module
    # objects whose __spec__ is None, which find_spec refuses.
    return all(module in sys.modules or importlib.util.find_spec(module) is not None for module in modules)
