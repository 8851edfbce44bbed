"""A settable clock for tests: stands in for the database clock of a :class:`MemoryStore` or a
:class:`~tickwork.sql.store.SQLStore` (``clock=``) and for the engine's reading of it."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from ..structures import utc

#: The default start of a fake clock: a round instant far from any DST change.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    """A clock that moves only when told to; calling it returns the current aware UTC time.

    Thread-safe, so an engine thread and a test can share it.

    :param start: the first reading (aware; converted to UTC)
    """

    def __init__(self, start: datetime = DEFAULT_START) -> None:
        self._now = utc(start)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        """Move forward by ``seconds`` (never backwards) and return the new time."""
        if seconds < 0:
            raise ValueError(f"seconds: a clock only moves forward, got {seconds}")
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, value: datetime) -> None:
        """Jump to ``value`` (aware; tests of a clock going backwards may use this too)."""
        moved = utc(value)
        with self._lock:
            self._now = moved
