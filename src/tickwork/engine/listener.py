"""What the engine tells observers as runs start, end and are skipped.

The engine reports in batches (one call per claim batch or end batch), so a 10,000-fire burst makes
about a hundred calls, not ten thousand. A listener that raises is logged and ignored: observing a
node must never stop it.

:class:`EngineListener` is the one declaration of the engine's events: each public method is an
event, its parameters are what the event carries. Everything else is derived from it
(:data:`ENGINE_EVENTS`): :class:`SafeListener` here, the adapter that turns events into the
``tickwork_<event>`` lifecycle hooks (:mod:`tickwork.node.hooklistener`), and the hookspecs
(:mod:`tickwork.plugin.specs`) are checked against it by a test. A new event is one method here,
its hookspec, and the places that emit it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence

from ..structures import Finish, JobCall, SkippedFire

__all__ = ["ENGINE_EVENTS", "EngineListener", "SafeListener", "SkippedFire", "hook_name"]

log = logging.getLogger("tickwork.engine")


class EngineListener:
    """Receives the engine's events; every method is a no-op here, override the ones you need.

    All methods are called from the engine's loop thread and must return quickly.
    """

    def runs_started(self, runs: Sequence[JobCall]) -> None:
        """Runs were handed to their executors (one call per dispatched batch; backfilled runs
        included: :attr:`JobCall.backfill` tells them apart)."""

    def runs_finished(self, results: Sequence[Finish]) -> None:
        """Run ends were written to the store (one call per written batch, skipped fires excluded:
        those come through :meth:`fires_skipped`)."""

    def fires_skipped(self, skipped: Sequence[SkippedFire]) -> None:
        """Fire times were recorded as skipped (misfire policy, still running, already recorded)."""

    def retries_planned(self, ended: Sequence[Finish]) -> None:
        """Failed attempts were written ended and their fires will be tried again: one
        :class:`Finish` per attempt, its ``next_fire`` the time the retry is due (database clock;
        ``None`` for a backfilled fire, retried when the backfill's queue takes it again).
        These ends never come through :meth:`runs_finished`; the retry's start comes through
        :meth:`runs_started` with the next attempt number."""

    def claimed(self, count: int, seconds: float) -> None:
        """One claim statement returned ``count`` claims after ``seconds`` (0 claims included)."""

    def store_error(self, error: Exception) -> None:
        """A store call failed; the engine backs off and retries."""


def _declared_events() -> dict[str, tuple[str, ...]]:
    return {
        name: tuple(inspect.signature(method).parameters)[1:]  # without self
        for name, method in vars(EngineListener).items()
        if inspect.isfunction(method) and not name.startswith("_")
    }


#: The engine's events, in declaration order: each one's name and the names of what it carries.
ENGINE_EVENTS: Mapping[str, tuple[str, ...]] = _declared_events()


def hook_name(event: str) -> str:
    """The lifecycle hook an engine event becomes (``runs_started`` → ``tickwork_runs_started``);
    it receives the event's parameters by name, and ``node_id``."""
    return f"tickwork_{event}"


class SafeListener(EngineListener):
    """Wraps a listener so that an exception it raises is logged (once per event) and ignored.
    Its methods are made from :data:`ENGINE_EVENTS` below."""

    def __init__(self, inner: EngineListener) -> None:
        self.inner = inner
        self._warned: set[str] = set()

    def _call(self, event: str, *args: object) -> None:
        try:
            getattr(self.inner, event)(*args)
        except Exception:
            if event not in self._warned:
                self._warned.add(event)
                log.exception("listener %s.%s raised; ignored", type(self.inner).__qualname__, event)


def _forwarding(event: str) -> Callable[..., None]:
    def forward(self: SafeListener, *args: object) -> None:
        self._call(event, *args)

    forward.__name__ = forward.__qualname__ = event
    forward.__doc__ = getattr(EngineListener, event).__doc__
    return forward


for _event in ENGINE_EVENTS:
    setattr(SafeListener, _event, _forwarding(_event))
