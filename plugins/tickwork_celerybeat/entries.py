"""What an import reads, whatever the source: one :class:`Imported` schedule per Celery beat
entry, and the refusals of entries tickwork cannot reproduce, gathered so that all are reported
at once."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tickwork.errors import ConfigError, ConfigProblems

#: The executor the imported schedules name unless ``--executor`` says otherwise: the Celery
#: executor publishes the task by name to the app's broker, so the Celery workers stay as they are.
DEFAULT_EXECUTOR = "celery"


@dataclass(frozen=True)
class Imported:
    """One schedule to write.

    :param name: the beat entry's name (``--prefix`` is added when written)
    :param kind: tickwork trigger kind (``cron``, ``calendar``, ``interval``, ``once``)
    :param expression: the trigger expression
    :param tz: IANA zone of the expression
    :param task: the Celery task name, the schedule's target
    :param args: positional arguments of the task
    :param kwargs: keyword arguments of the task
    :param options: the entry's ``apply_async`` options (``queue``, ``routing_key``,
        ``exchange``, ``priority``, ``expires``, ``headers``)
    :param enabled: whether it fires
    :param notes: what the user should know about this entry (said on stderr)
    """

    name: str
    kind: str
    expression: str
    tz: str
    task: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    enabled: bool = True
    notes: tuple[str, ...] = ()

    def arguments(self) -> dict[str, Any]:
        """The schedule's ``args`` option: the call as Celery's ``send_task`` takes it, in three
        keys so that a task keyword named ``queue`` or ``args`` cannot be mistaken for an option
        (docs/celery.md#what-the-schedules-hold)."""
        return {"args": list(self.args), "kwargs": dict(self.kwargs), "options": dict(self.options)}

    def fields(self, executor: str, prefix: str = "") -> dict[str, Any]:
        """The arguments of ``Admin.add`` (and the fields of a ``jobs add --from`` file)."""
        return {
            "name": prefix + self.name,
            "expression": self.expression,
            "target": self.task,
            "kind": self.kind,
            "tz": self.tz,
            "executor": executor,
            "args": self.arguments(),
            "enabled": self.enabled,
        }


def json_value(value: Any) -> Any:
    """``value`` as JSON can hold it: tuples become lists, datetimes ISO-8601 text, timedeltas
    seconds (Celery's ``expires`` takes either).

    :raises ValueError: for a value JSON cannot hold
    """
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"args, kwargs and options must hold JSON values only: {exc}") from exc
    return value


class Refusals:
    """The entries an import cannot write, each with why; nothing is written when there is one.

    :param skip: names of entries left out (``--skip``): their refusals are not counted
    """

    def __init__(self, source: str, skip: Iterable[str] = ()) -> None:
        self.source = source
        self.skip = frozenset(skip)
        self.found: list[str] = []
        #: The skipped entries that were refused.
        self.skipped: set[str] = set()

    def add(self, name: str, message: str) -> None:
        if name in self.skip:
            self.skipped.add(name)
            return
        self.found.append(f"{self.source}: entry {name!r}: {message}")

    def check(self) -> None:
        """:raises tickwork.errors.ConfigError: the refusal, or every one (``ConfigProblems``)"""
        if len(self.found) == 1:
            raise ConfigError(f"{self.found[0]}; nothing was imported")
        if self.found:
            raise ConfigProblems(
                f"{self.source}: {len(self.found)} entries cannot be imported; nothing was imported", self.found
            )
