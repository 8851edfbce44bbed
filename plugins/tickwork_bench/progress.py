"""A plain-text progress line on stderr: which cell runs, and how far it has got."""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 24


class Progress:
    """Redraws one line in place on a terminal; elsewhere (CI logs) prints one line per cell.

    :param total: number of cells
    """

    def __init__(self, total: int, stream: TextIO | None = None, *, enabled: bool = True) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self.index = 0
        self.label = ""
        self._started = time.monotonic()
        self._cell_started = self._started
        self._last_draw = 0.0

    def start_cell(self, label: str) -> None:
        self.index += 1
        self.label = label
        self._cell_started = time.monotonic()
        self._draw(0, 0, force=True)

    def update(self, done: int, expected: int, phase: str = "") -> None:
        self._draw(done, expected, phase=phase)

    def end_cell(self, summary: str) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self._cell_started
        line = f"[{self.index}/{self.total}] {self.label}: {summary} ({elapsed:.1f}s)"
        self.stream.write(("\r\x1b[K" if self.tty else "") + line + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        if self.enabled:
            self.stream.write(("\r\x1b[K" if self.tty else "") + text + "\n")
            self.stream.flush()

    def _draw(self, done: int, expected: int, *, phase: str = "", force: bool = False) -> None:
        if not self.enabled or not self.tty:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < 0.1:
            return
        self._last_draw = now
        filled = int(BAR_WIDTH * min(done, expected) / expected) if expected else 0
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        count = f"{done:,}/{expected:,}" if expected else phase
        line = f"[{self.index}/{self.total}] {self.label} [{bar}] {count} {now - self._started:.0f}s"
        self.stream.write("\r\x1b[K" + line)
        self.stream.flush()
