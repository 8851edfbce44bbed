"""Values a page shows that are costly to compute and need not be fresher than a few seconds:
the summary strip (:data:`STRIP_SECONDS`; forgotten at once after an action taken through this
dashboard, so its operator sees the effect) and the overall runs chart (:data:`CHART_SECONDS`).
One value per ``tickwork web`` process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

#: The summary strip costs a few queries that sort the schedules (about 0.1 s at 100,000 on
#: SQLite), while the schedules page refreshes every 3 s.
STRIP_SECONDS = 10.0
#: The overall chart reads up to 10,000 runs and its buckets are an hour wide.
CHART_SECONDS = 30.0


class Memo(Generic[T]):
    """A value kept for ``seconds``, computed again by the next :meth:`get` when older.

    :param clock: monotonic seconds (tests inject one)
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._value: T | None = None
        self._at = 0.0

    def get(self, make: Callable[[], T]) -> T:
        with self._lock:
            if self._value is None or self.clock() - self._at >= self.seconds:
                self._value = make()
                self._at = self.clock()
            return self._value

    def forget(self) -> None:
        with self._lock:
            self._value = None
