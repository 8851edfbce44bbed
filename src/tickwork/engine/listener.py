"""What the engine tells observers as runs start, end and are skipped.

The engine reports in batches (one call per claim batch or end batch), so a 10,000-fire burst makes
about a hundred calls, not ten thousand. A listener that raises is logged and ignored: observing a
node must never stop it. The pluggy lifecycle hooks (``hookspecs.py``) and the metrics plugin are
built on this seam; the engine itself knows nothing about either.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..structures import Finish, JobCall

log = logging.getLogger("tickwork.engine")


@dataclass(frozen=True)
class SkippedFire:
    """A fire time that was passed over, as recorded in the history with ``status = skipped``."""

    schedule: str
    scheduled_for: datetime
    reason: str


class EngineListener:
    """Receives the engine's events; every method is a no-op here, override the ones you need.

    All methods are called from the engine's loop thread and must return quickly.
    """

    def runs_started(self, runs: Sequence[JobCall]) -> None:
        """Runs were handed to their executors (one call per dispatched batch)."""

    def runs_finished(self, results: Sequence[Finish]) -> None:
        """Run ends were written to the store (one call per written batch, skipped fires excluded:
        those come through :meth:`fires_skipped`)."""

    def fires_skipped(self, skipped: Sequence[SkippedFire]) -> None:
        """Fire times were recorded as skipped (misfire policy, still running, already recorded)."""

    def claimed(self, count: int, seconds: float) -> None:
        """One claim statement returned ``count`` claims after ``seconds`` (0 claims included)."""

    def store_error(self, error: Exception) -> None:
        """A store call failed; the engine backs off and retries."""


class SafeListener(EngineListener):
    """Wraps a listener so that an exception it raises is logged (once per method) and ignored."""

    def __init__(self, inner: EngineListener) -> None:
        self.inner = inner
        self._warned: set[str] = set()

    def _call(self, method: str, *args: object) -> None:
        try:
            getattr(self.inner, method)(*args)
        except Exception:
            if method not in self._warned:
                self._warned.add(method)
                log.exception("listener %s.%s raised; ignored", type(self.inner).__qualname__, method)

    def runs_started(self, runs: Sequence[JobCall]) -> None:
        self._call("runs_started", runs)

    def runs_finished(self, results: Sequence[Finish]) -> None:
        self._call("runs_finished", results)

    def fires_skipped(self, skipped: Sequence[SkippedFire]) -> None:
        self._call("fires_skipped", skipped)

    def claimed(self, count: int, seconds: float) -> None:
        self._call("claimed", count, seconds)

    def store_error(self, error: Exception) -> None:
        self._call("store_error", error)
