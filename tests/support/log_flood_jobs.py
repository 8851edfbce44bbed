"""Jobs of tests/system/test_fault_log_flood.py, run by a real ``tickwork run`` node (``[scheduler] jobs``).

``flood`` logs :data:`FLOOD_LINES` lines as fast as it can through an application logger (the
command line's handler sits on the root logger, so it gets every logger's records) and writes
``flood.json`` (lines, seconds) to ``$FLOOD_DIR`` when done. The ``tick_*`` jobs fire every second
and do nothing: their history is what shows whether the node kept firing.

When ``$FLOOD_DIR`` is set (in the node only, never in the test process importing the constants),
importing the module counts every record handed to the root logger's handler with a
:class:`logging.Filter` (the public way to see what a handler is given) and writes the count to
``handled.json`` at exit. The node imports the module in its ``open()``, in its main thread before
its executors and loop start, so nothing else is logging while the counter is attached; the
``PROBE_MARKER`` line logged right after it tells the test where the counted lines begin.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
from pathlib import Path

import tickwork

FLOOD_LINES = 100_000
PROBE_MARKER = "log flood probe attached"
FLOOD_LOGGER = "flood"


class HandedCounter(logging.Filter):
    """Counts the records a handler is handed; lets all of them through."""

    def __init__(self) -> None:
        super().__init__()
        # Handler.handle() calls its filters outside the handler's lock: the ticks' threads, the
        # node's loop and the flood all log at once.
        self._lock = threading.Lock()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            self.count += 1
        return True


def _attach(out: Path) -> None:
    handlers = logging.getLogger().handlers
    if len(handlers) != 1:
        # The count would not be the handler's: say so rather than count something else.
        (out / "handled.json").write_text(json.dumps({"error": f"root handlers: {handlers!r}"}))
        return
    counter = HandedCounter()
    handlers[0].addFilter(counter)
    logging.getLogger(FLOOD_LOGGER).info(PROBE_MARKER)

    def write_count() -> None:
        # Registered after logging's own exit hook, so it runs before the handler's close():
        # every record emitted by then is counted; the close only writes what already waits.
        (out / "handled.json").write_text(json.dumps({"handled": counter.count, "handler": type(handlers[0]).__name__}))

    atexit.register(write_count)


if os.environ.get("FLOOD_DIR"):
    _attach(Path(os.environ["FLOOD_DIR"]))


@tickwork.cron("0 0 1 1 *", name="flood")
def flood() -> None:
    """Fired by the test (``trigger``); yearly otherwise."""
    log = logging.getLogger(FLOOD_LOGGER)
    started = time.monotonic()
    for n in range(FLOOD_LINES):
        log.info("flood line %d", n)
    seconds = time.monotonic() - started
    Path(os.environ["FLOOD_DIR"], "flood.json").write_text(json.dumps({"lines": FLOOD_LINES, "seconds": seconds}))


@tickwork.cron("* * * * * *", name="tick-0")
def tick_0() -> None:
    pass


@tickwork.cron("* * * * * *", name="tick-1")
def tick_1() -> None:
    pass


@tickwork.cron("* * * * * *", name="tick-2")
def tick_2() -> None:
    pass


@tickwork.cron("* * * * * *", name="tick-3")
def tick_3() -> None:
    pass


@tickwork.cron("* * * * * *", name="tick-4")
def tick_4() -> None:
    pass


TICKS = [f"tick-{n}" for n in range(5)]
