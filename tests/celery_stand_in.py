"""A stand-in ``celery`` executor for the import tests, registered only in their subprocesses
(through a ``dist-info`` on ``PYTHONPATH``, see :func:`register`): the imports write schedules
naming executor ``celery``, and ``jobs add`` (so the import too) refuses an executor that is not
configured. It checks what the import must write (a dotted Celery task name, and ``args``,
``kwargs`` and ``options`` in the schedule's arguments) and runs nothing: the tests never start a
node with it. The real Celery executor is a plugin of its own."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tickwork.abc import Executor
from tickwork.errors import ExecutorError
from tickwork.plugin import Registry, hookimpl
from tickwork.structures import JobCall, Outcome, RunStatus

TASK_NAME = re.compile(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*")


class CeleryStandIn(Executor):
    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        if not TASK_NAME.fullmatch(target):
            raise ExecutorError(f"not a Celery task name: {target!r}")
        shape = {"args": list, "kwargs": dict, "options": dict}
        if set(arguments) != set(shape) or any(not isinstance(arguments[k], t) for k, t in shape.items()):
            raise ExecutorError(
                f"arguments must be {{args: [...], kwargs: {{...}}, options: {{...}}}}, got {arguments!r}"
            )

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        on_done(Outcome(RunStatus.FAILED, error="the test stand-in of the celery executor runs nothing"))

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        return None


@hookimpl
def tickwork_register_executors(registry: Registry[type[Executor]]) -> None:
    registry.add("celery", CeleryStandIn)


def register(directory: Path) -> Path:
    """A directory that, on ``PYTHONPATH``, registers this module as the ``celery`` executor."""
    info = directory / "tickwork_celery_stand_in-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tickwork-celery-stand-in\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[tickwork]\ncelery = tests.celery_stand_in\n")
    return directory
