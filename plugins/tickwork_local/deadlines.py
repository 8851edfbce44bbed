"""One watchdog thread firing callbacks at deadlines (soft timeouts), cheaper than a timer each."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

#: The longest single wait (threading.TIMEOUT_MAX is about 292 years on Linux, less elsewhere).
MAX_WAIT = min(threading.TIMEOUT_MAX, 86400.0)

#: Cancelled deadlines kept before they are swept out of the middle of their lanes (a cancelled
#: one at the head of its lane goes at once).
SWEEP_AFTER = 1024


class Watched(Protocol):
    """What a lane holds: ``callback`` (``None`` once cancelled or fired, set by
    :class:`Deadlines` only) and ``lane``, the timeout in seconds it was watched with.
    :class:`Deadline` is one; a local executor's thread run is its own (one object per run)."""

    callback: Callable[[], None] | None
    lane: float


class Deadline:
    """A pending callback; :meth:`Deadlines.cancel` drops it (and what it holds) early."""

    __slots__ = ("callback", "lane")

    def __init__(self, callback: Callable[[], None], lane: float) -> None:
        self.callback: Callable[[], None] | None = callback
        self.lane = lane


class Deadlines:
    """Deadlines in first-in-first-out lanes, one per timeout length.

    Deadlines of one length come due in the order they were added, so a lane is a queue: adding
    one is an append and the next due is the earliest lane head (a node has a handful of
    timeouts). A heap cost a push of some 16 comparisons per run with tens of thousands of runs
    in flight (4 % of a node's engine thread in a burst of no-op runs).

    A cancelled deadline lets go of its callback at once (a run's watchdog would otherwise keep
    its call and closures alive for the whole timeout: measured 143 MB per node after 60 s at
    1,000 fires/s, 69 MB flat with cancel). Runs mostly end in the order they started, so
    cancelled ones are mostly at the head of their lane and dropped right away; the others are
    swept out once they are many and most of what is kept.
    """

    def __init__(self) -> None:
        self._lanes: dict[float, deque[tuple[float, Watched]]] = {}
        self._kept = 0  # entries in the lanes
        self._cancelled = 0  # of those, cancelled
        self._cond = threading.Condition(threading.Lock())
        # When the watchdog wakes on its own: an earlier deadline must notify it. -inf while it
        # is not waiting (it looks at every lane before it waits again).
        self._wakes_at = -math.inf
        self._thread: threading.Thread | None = None
        self._stopped = False

    def __len__(self) -> int:
        """Deadlines still pending (not fired, not cancelled)."""
        with self._cond:
            return self._kept - self._cancelled

    def kept(self) -> int:
        """Entries still held, cancelled ones not yet dropped included (memory, not work)."""
        with self._cond:
            return self._kept

    def start(self) -> None:
        with self._cond:
            self._stopped = False
        self._thread = threading.Thread(target=self._run, name="tickwork-deadlines", daemon=True)
        self._thread.start()

    def add(self, seconds: float, callback: Callable[[], None]) -> Deadline:
        """Call ``callback`` in ``seconds`` unless :meth:`cancel` comes first."""
        entry = Deadline(callback, seconds)
        self.watch(entry)
        return entry

    def watch(self, entry: Watched) -> None:
        """Call ``entry.callback`` in ``entry.lane`` seconds unless :meth:`cancel` comes first."""
        seconds = entry.lane
        with self._cond:
            # Under the lock: a lane's deadlines are appended in the order they fall due.
            when = time.monotonic() + seconds
            lane = self._lanes.get(seconds)
            if lane is None:
                lane = self._lanes[seconds] = deque()
            lane.append((when, entry))
            self._kept += 1
            if when < self._wakes_at:
                self._cond.notify()

    def cancel(self, entry: Watched) -> None:
        """Forget ``entry``'s callback; safe to call more than once and after it fired."""
        with self._cond:
            if entry.callback is None:
                return
            entry.callback = None
            self._cancelled += 1
            lane = self._lanes.get(entry.lane)
            if lane is not None:
                self._drop_cancelled_heads(entry.lane, lane)
            if self._cancelled > SWEEP_AFTER and self._cancelled * 2 > self._kept:
                self._sweep()

    def _drop_cancelled_heads(self, key: float, lane: deque[tuple[float, Watched]]) -> None:
        while lane and lane[0][1].callback is None:
            lane.popleft()
            self._kept -= 1
            self._cancelled -= 1
        if not lane:
            del self._lanes[key]

    def _sweep(self) -> None:
        for key, lane in list(self._lanes.items()):
            live = deque(item for item in lane if item[1].callback is not None)
            if live:
                self._lanes[key] = live
            else:
                del self._lanes[key]
        self._kept = sum(len(lane) for lane in self._lanes.values())
        self._cancelled = 0

    def _next_due(self, now: float) -> tuple[Callable[[], None] | None, float]:
        """Pop the earliest deadline if it is due: (its callback, 0), else (None, when the
        earliest falls due or inf). Under the lock."""
        earliest, earliest_key = math.inf, None
        for key, lane in list(self._lanes.items()):
            self._drop_cancelled_heads(key, lane)
            if lane and lane[0][0] < earliest:
                earliest, earliest_key = lane[0][0], key
        if earliest_key is None or earliest > now:
            return None, earliest
        lane = self._lanes[earliest_key]
        entry = lane.popleft()[1]
        self._kept -= 1
        if not lane:
            del self._lanes[earliest_key]
        callback, entry.callback = entry.callback, None
        return callback, 0.0

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    now = time.monotonic()
                    callback, wake_at = self._next_due(now)
                    if callback is not None:
                        break
                    self._wakes_at = wake_at
                    # Clamped: a wait beyond threading.TIMEOUT_MAX raises OverflowError, which
                    # would end this thread and every soft timeout of the node with it.
                    self._cond.wait(None if wake_at == math.inf else min(wake_at - now, MAX_WAIT))
                    self._wakes_at = -math.inf
            callback()  # returns at once when the run already ended

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._lanes.clear()
            self._kept = 0
            self._cancelled = 0
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
