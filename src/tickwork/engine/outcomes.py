"""The outcomes of runs on their way from executor threads to the engine loop: a queue the
executors fill, and when an arrival wakes the loop. An outcome wakes it only when the loop would
otherwise look later than the end batch window allows (a pass per run end was most of a spread
load's CPU), or at once where nothing else could share its end's write."""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Callable, Iterator, Sized
from typing import Generic, Protocol, TypeVar

from ..structures import Claim, Outcome
from .clock import DatabaseClock
from .ends import EndWriter


class Tracked(Protocol):
    """A run as the engine tracks it (:class:`.runs.InFlight`): what an outcome is reported for."""

    @property
    def claim(self) -> Claim: ...


F = TypeVar("F", bound=Tracked)


class Outcomes(Generic[F]):
    """The outcomes reported for the runs of ``in_flight`` (by their executors' threads), with the
    monotonic time each arrived; ``wake`` is set when one must not wait for the loop's next look."""

    def __init__(self, in_flight: Sized, ends: EndWriter, clock: DatabaseClock, wake: threading.Event) -> None:
        self._in_flight = in_flight
        self._ends = ends
        self._clock = clock
        self._wake = wake
        #: (run, outcome, monotonic time it arrived), filled from executor threads.
        self._done: queue.SimpleQueue[tuple[F, Outcome, float]] = queue.SimpleQueue()
        # Monotonic time by which the loop looks at the queue anyway (written by the loop thread
        # only; see loop_asleep). An outcome wakes the loop only when that is later than the end
        # batch window allows. 0 while a pass runs (the loop checks the queue after it), infinite
        # while no loop runs.
        self._looks_by = math.inf
        # Set by loop_asleep: nothing is due to start within the end batch window, so the outcome
        # of the last run in flight wakes the loop at once (its end has no company to wait for).
        self._quiet = False

    def reporter(self, flight: F) -> Callable[[Outcome], None]:
        """What ``flight``'s executor calls with its outcome (from any thread)."""
        monotonic = self._clock.monotonic
        backfill = flight.claim.backfill

        def on_done(outcome: Outcome) -> None:
            arrived = monotonic()
            self._done.put((flight, outcome, arrived))
            # Reads of the loop's state from an executor thread: while the loop sleeps it changes
            # none of it; while it runs a pass (_looks_by 0) it collects the outcome anyway.
            last = self._quiet and self._done.qsize() >= len(self._in_flight)
            # A backfilled run's end wakes the loop at once: the backfill's next fire waits for
            # it (backfills.py), and its end is written on its own anyway (EndWriter).
            if last or backfill or self._looks_by > arrived + self._ends.window:
                self._wake.set()

        return on_done

    def arrived(self) -> Iterator[tuple[F, Outcome, float]]:
        """The outcomes arrived so far, taken off the queue in arrival order."""
        while True:
            try:
                yield self._done.get_nowait()
            except queue.Empty:
                return

    # -- when outcomes wake the loop --------------------------------------------------------------

    def loop_awake(self) -> None:
        """The loop starts a pass: an outcome arriving now is seen by :meth:`loop_asleep`."""
        self._looks_by = 0.0
        self._quiet = False

    def loop_asleep(self, wait: float, *, quiet: bool = False) -> float:
        """The loop is about to wait ``wait`` seconds; returns how long it may wait so that no
        outcome waits longer than the end batch window to be collected.

        :param quiet: nothing is due to start within the end batch window: the outcome of the
            last run in flight wakes the loop at once (its end is written at once, see EndWriter)
        """
        now = self._clock.monotonic()
        self._quiet = quiet
        self._looks_by = now + wait
        # After publishing the time: an outcome put before this check is seen here, one put
        # after it sees the time and wakes the loop if that is too late.
        if quiet and not self._done.empty() and self._done.qsize() >= len(self._in_flight):
            wait = 0.0
        elif not self._done.empty() and wait > self._ends.window:
            wait = self._ends.window
            self._looks_by = now + wait
        return wait

    def loop_stopped(self) -> None:
        """No loop runs (stopping, draining, tests driving passes by hand): every outcome wakes."""
        self._looks_by = math.inf
