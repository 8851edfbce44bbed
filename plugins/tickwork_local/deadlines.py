"""One watchdog thread firing callbacks at deadlines (soft timeouts), cheaper than a timer each."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


class Deadlines:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._cond = threading.Condition()
        self._counter = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def start(self) -> None:
        with self._cond:
            self._stopped = False
        self._thread = threading.Thread(target=self._run, name="tickwork-deadlines", daemon=True)
        self._thread.start()

    def add(self, seconds: float, callback: Callable[[], None]) -> None:
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._counter), callback))
            if self._heap[0][2] is callback:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    self._cond.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                if self._stopped:
                    return
                _, _, callback = heapq.heappop(self._heap)
            callback()  # returns at once when the run already ended

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
