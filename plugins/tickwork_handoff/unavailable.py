"""The stand-in registered under a hand-off executor's name when its client library is missing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from tickwork.abc import Executor
from tickwork.errors import ConfigError
from tickwork.structures import JobCall, Outcome


def unavailable(name: str, hint: str) -> type[Executor]:
    """An executor class named for ``name`` whose every use raises a ConfigError saying ``hint``."""

    class Unavailable(Executor):
        options: ClassVar[dict[str, type | tuple[type, ...]]] = {}

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
