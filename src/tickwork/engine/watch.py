"""Watching the loop's passes: what a pass is waiting on, and whether it has waited too long.

A node whose loop thread is stuck (a statement waiting on a lock, a slow disk, an executor that
blocks in ``submit``) starts nothing, while its heartbeat thread would keep vouching for it: the
others would never take over. The watch names the step a pass is in, logs a pass slower than
``stall_after`` at WARNING, and answers :meth:`stalled` for the node's health and its heartbeat.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger("tickwork.engine")


class PassWatch:
    """The current pass's start and step, readable from any thread.

    :param stall_after: seconds after which a pass counts as stalled (the node's ``node_ttl / 2``)
    """

    def __init__(self, monotonic: Callable[[], float], stall_after: float) -> None:
        self.monotonic = monotonic
        self.stall_after = stall_after
        self._lock = threading.Lock()
        self._pass_started: float | None = None
        self._step = "nothing"
        self._step_started = 0.0
        #: The slowest step of the pass in progress: (seconds, what).
        self._slowest: tuple[float, str] = (0.0, "nothing")

    @contextmanager
    def pass_(self) -> Iterator[None]:
        """One pass of the loop; logs it at WARNING if it took longer than ``stall_after``."""
        started = self.monotonic()
        with self._lock:
            self._pass_started, self._step, self._step_started = started, "the loop's own work", started
            self._slowest = (0.0, "the loop's own work")
        try:
            yield
        finally:
            ended = self.monotonic()
            with self._lock:
                self._close_step(ended)
                slowest, self._pass_started = self._slowest, None
            took = ended - started
            if took > self.stall_after:
                log.warning(
                    "a pass of the loop took %.1fs (more than node_ttl/2 = %.1fs): waited %.1fs on %s",
                    took,
                    self.stall_after,
                    slowest[0],
                    slowest[1],
                )

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        """A step of the pass that may wait (a store call, an executor hand-off)."""
        now = self.monotonic()
        with self._lock:
            self._close_step(now)
            self._step, self._step_started = what, now
        try:
            yield
        finally:
            now = self.monotonic()
            with self._lock:
                self._close_step(now)
                self._step, self._step_started = "the loop's own work", now

    def _close_step(self, now: float) -> None:
        took = now - self._step_started
        if took > self._slowest[0]:
            self._slowest = (took, self._step)

    def stalled(self) -> str | None:
        """What the pass in progress has been waiting on, if longer than ``stall_after``; else ``None``."""
        with self._lock:
            if self._pass_started is None:
                return None
            now = self.monotonic()
            if now - self._pass_started <= self.stall_after:
                return None
            return (
                f"{self._step} for {now - self._step_started:.1f}s (pass running for {now - self._pass_started:.1f}s)"
            )
