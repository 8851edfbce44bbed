"""The command line's log handler: writes to stderr from a thread of its own, so that a stderr
nobody reads (a full pipe, a stuck terminal, a log shipper that stalls) never blocks the thread
that logged. A node logs a line per run end from its loop thread: with a plain
:class:`logging.StreamHandler`, a pipe read by nobody stopped a node's loop for 26 s (measured:
docs/benchmarks.md, "A lesson from the first version of the script"), long enough for the others
to declare it dead.

Lines wait in a bounded queue; when stderr falls that far behind, further lines are dropped and
counted, and one WARNING line, where they were dropped, says how many (at exit at the latest)."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from typing import TextIO

#: Lines that may wait for stderr before further ones are dropped (a few MB at most).
CAPACITY = 10_000
#: Seconds the process's exit waits for waiting lines to be written.
EXIT_WAIT = 5.0

_STOP = object()


class _Dropped:
    """Stands in the queue for the lines dropped just before it."""

    def __init__(self, count: int) -> None:
        self.count = count


class BackgroundStreamHandler(logging.Handler):
    """Formats each record in the logging thread and writes it to ``stream`` from a writer thread."""

    def __init__(self, stream: TextIO, capacity: int = CAPACITY) -> None:
        super().__init__()
        self.stream = stream
        self._lines: queue.Queue[object] = queue.Queue(maxsize=capacity)
        self._dropped = 0
        self._count_lock = threading.Lock()
        self._writer = threading.Thread(target=self._write_lines, name="tickwork-log-writer", daemon=True)
        self._writer.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        with self._count_lock:
            # The count of lines dropped goes in first, where they were dropped.
            if self._dropped:
                try:
                    self._lines.put_nowait(_Dropped(self._dropped))
                except queue.Full:
                    self._dropped += 1
                    return
                self._dropped = 0
            try:
                self._lines.put_nowait(line)
            except queue.Full:
                self._dropped += 1

    def _dropped_line(self, dropped: int) -> str:
        record = logging.LogRecord(
            "tickwork.log",
            logging.WARNING,
            __file__,
            0,
            "%d log line(s) dropped: stderr was not read as fast as they came (the node went on; "
            "the history has every run)",
            (dropped,),
            None,
        )
        return self.format(record)

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: nothing left to tell
            pass

    def _write_lines(self) -> None:
        while True:
            item = self._lines.get()
            try:
                if item is _STOP:
                    return
                self._write(self._dropped_line(item.count) if isinstance(item, _Dropped) else str(item))
            finally:
                self._lines.task_done()

    def flush(self) -> None:
        """Wait until the waiting lines are written (at most :data:`EXIT_WAIT` seconds)."""
        deadline = time.monotonic() + EXIT_WAIT
        while self._lines.unfinished_tasks and self._writer.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        """Write what waits (at most :data:`EXIT_WAIT` seconds), then the dropped count, then stop."""
        if self._writer.is_alive():
            self.flush()
            with contextlib.suppress(queue.Full):
                self._lines.put(_STOP, timeout=EXIT_WAIT)
            self._writer.join(EXIT_WAIT)
        with self._count_lock:
            dropped, self._dropped = self._dropped, 0
        if dropped and not self._writer.is_alive():
            self._write(self._dropped_line(dropped))
        super().close()
