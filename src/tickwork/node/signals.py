"""SIGINT/SIGTERM for a node run in the foreground: the first stops it after running jobs end,
a second stops it at once."""

from __future__ import annotations

import logging
import queue
import signal
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("tickwork.node")


class StopSignals:
    """Installs the handlers (main thread only) and acts on the signals from a thread of its own.

    The handler only queues the signal (``SimpleQueue.put`` is safe in a signal handler); the
    thread acts on it. Acting in the handler could deadlock: it interrupts the main thread
    anywhere, possibly holding the very lock the engine's stop needs.

    :param stop: asks the node to stop after running jobs end
    :param stop_now: stops at once (running runs are recorded abandoned)
    """

    def __init__(self, stop: Callable[[], None], stop_now: Callable[[], None]) -> None:
        self._stop = stop
        self._stop_now = stop_now
        self._queue: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._previous: dict[signal.Signals, Any] = {}
        self._acting: threading.Thread | None = None
        #: Whether the handlers are installed (the stop's messages then mention a second signal).
        self.installed = False

    def install(self) -> None:
        """Install the handlers; outside the main thread (where Python allows none) do nothing."""
        if threading.current_thread() is not threading.main_thread():
            return
        self._acting = threading.Thread(target=self._act, name="tickwork-signals", daemon=True)
        self._acting.start()
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, lambda signum, _frame: self._queue.put(signum))
        self.installed = True

    def restore(self) -> None:
        """Put the previous handlers back and end the acting thread."""
        self.installed = False
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
        if self._acting is not None:
            self._queue.put(None)
            self._acting = None

    def _act(self) -> None:
        seen = 0
        while (signum := self._queue.get()) is not None:
            seen += 1
            name = signal.Signals(signum).name
            if seen == 1:
                log.info("received %s; stopping after running jobs end (send it again to stop at once)", name)
                self._stop()
            else:
                log.warning("received %s again; stopping now, running runs are recorded abandoned", name)
                self._stop_now()
