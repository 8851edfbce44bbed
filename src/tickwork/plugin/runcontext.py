"""The run a job is executing in: ``tickwork.current_run()`` and ``tickwork.RunContext``.

Executors set the context around the target call (:func:`running`); a job reads it with
:func:`current_run` or by declaring one parameter annotated :class:`RunContext`.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from datetime import datetime

from ..structures import JobCall, _check_aware, assembled


@dataclass(frozen=True)
class RunContext:
    """One run of a schedule, as recorded in the history.

    :param schedule: the schedule's name
    :param scheduled_for: the fire time this run is for (aware, UTC)
    :param run_id: id of the history row of this attempt
    :param attempt: 1 for the first attempt, 2 for the first retry, ...
    :param node_id: the node that started the run
    """

    schedule: str
    scheduled_for: datetime
    run_id: int
    attempt: int
    node_id: str

    def __post_init__(self) -> None:
        _check_aware("scheduled_for", self.scheduled_for)
        if self.attempt < 1:
            raise ValueError(f"attempt: must be >= 1, got {self.attempt}")

    @classmethod
    def of(cls, call: JobCall) -> RunContext:
        """The context of the run an executor received as ``call``."""
        # The checks of __init__, without its per-field object.__setattr__: once per run.
        _check_aware("scheduled_for", call.scheduled_for)
        if call.attempt < 1:
            raise ValueError(f"attempt: must be >= 1, got {call.attempt}")
        return assembled(
            cls,
            {
                "schedule": call.schedule,
                "scheduled_for": call.scheduled_for,
                "run_id": call.run_id,
                "attempt": call.attempt,
                "node_id": call.node_id,
            },
        )


_current: contextvars.ContextVar[RunContext] = contextvars.ContextVar("tickwork_current_run")


def current_run() -> RunContext:
    """The run the calling job executes in.

    :raises LookupError: when called outside a run
    """
    try:
        return _current.get()
    except LookupError:
        raise LookupError("tickwork.current_run() was called outside a tickwork run") from None


class running:
    """Make ``context`` the current run for the code inside the ``with`` block (this thread or
    task). A class, not a generator-based context manager: it is entered for every run (1.0 µs
    a ``with`` block, against 1.8 as a generator)."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: RunContext) -> None:
        self._context = context

    def __enter__(self) -> RunContext:
        self._token = _current.set(self._context)
        return self._context

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)
