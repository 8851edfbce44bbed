"""How the CLI prints listings: aligned columns under a header on a terminal, fitted to its
width, tab-separated rows (no header) when piped, or one JSON object per line with ``--json``; an
empty result is said on stderr so that stdout stays empty for scripts."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from .. import structures

#: A column that is never dropped to fit the terminal.
ESSENTIAL = 100
#: Columns kept this little are extras: dropped before any other column is cut.
EXTRA = 10


def iso_z(value: datetime | None) -> str:
    """ISO-8601 in UTC with a trailing ``Z``; ``-`` for no value."""
    return "-" if value is None else structures.iso_z(value)


def short_time(value: datetime | None) -> str:
    """A time for people reading a table: ``2026-11-26 10:04:05Z`` (UTC, whole seconds); ``-``."""
    if value is None:
        return "-"
    return f"{value.astimezone(UTC):%Y-%m-%d %H:%M:%S}Z"


def age(value: datetime | None, now: datetime) -> str:
    """How long before ``now`` ``value`` was, for a narrow table: ``12s ago``, ``4m ago``,
    ``3h ago``, ``2d ago`` (``in 5m`` for a time to come); ``-`` for no value."""
    if value is None:
        return "-"
    seconds = (now - value) / timedelta(seconds=1)
    ahead, seconds = seconds < 0, abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            text = f"{int(seconds // size)}{unit}"
            break
    else:
        text = f"{int(seconds)}s"
    return f"in {text}" if ahead else f"{text} ago"


def duration(start: datetime | None, end: datetime | None) -> str:
    """How long from ``start`` to ``end``, the way people say it: ``850ms``, ``12.3s``,
    ``4m05s``, ``2h03m``; ``-`` when either is missing."""
    if start is None or end is None:
        return "-"
    seconds = max((end - start) / timedelta(seconds=1), 0.0)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def one_line(text: str | None, limit: int = 100) -> str:
    """The first line of ``text``, cut to ``limit`` characters; ``-`` for nothing."""
    if not text:
        return "-"
    first = text.strip().splitlines()[0] if text.strip() else "-"
    return first if len(first) <= limit else first[: limit - 3] + "..."


@dataclass(frozen=True)
class Column:
    """One column of a listing, with what it may give up when the terminal is narrow.

    :param keep: how much the column is worth; the lowest go first when the row does not fit
        (:data:`ESSENTIAL` ones never go)
    :param shrink: the narrowest it may be cut to (with an ellipsis); ``None``: never cut
    :param cut_first: cut down to its floor before any other column is cut (a column whose
        start says enough, such as a long expression)
    """

    header: str
    keep: int = ESSENTIAL
    shrink: int | None = None
    cut_first: bool = False


def _ellipsis(stream: TextIO) -> str:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return "…" if encoding == "utf8" else "..."


def _cut(text: str, width: int, mark: str) -> str:
    if len(text) <= width:
        return text
    if width <= len(mark):
        return text[:width]
    return text[: width - len(mark)] + mark


def _floor(column: Column, natural: int) -> int:
    """The narrowest ``column`` may be cut to (its natural width when it may not be cut)."""
    return natural if column.shrink is None else min(natural, column.shrink)


def fit(columns: Sequence[Column], natural: Sequence[int], width: int) -> tuple[list[int], list[int]]:
    """Which columns to show and how wide, for a terminal ``width`` wide: all at their natural
    width when they fit; else the extras (``keep`` up to :data:`EXTRA`) dropped, then the
    cuttable ones cut (those marked ``cut_first`` first, then the most over its floor) when
    that is enough; else the least-kept
    droppable column dropped and the same again. Whatever is left may still be too
    wide (every column essential and uncuttable): the printer cuts each line at ``width``.

    :return: (indexes of the shown columns, their widths)
    """
    shown = list(range(len(columns)))
    while True:
        widths = [natural[i] for i in shown]
        excess = sum(widths) + 2 * (len(shown) - 1) - width
        if excess <= 0:
            return shown, widths
        floors = [_floor(columns[i], natural[i]) for i in shown]
        droppable = [i for i in shown if columns[i].keep < ESSENTIAL]
        extras = [i for i in droppable if columns[i].keep <= EXTRA]
        cut_enough = sum(w - f for w, f in zip(widths, floors, strict=True)) >= excess
        if (cut_enough and not extras) or not droppable:
            while excess > 0:
                # The columns marked cut_first give way first, then the one most over its floor.
                k = max(
                    range(len(shown)),
                    key=lambda j: (columns[shown[j]].cut_first and widths[j] > floors[j], widths[j] - floors[j]),
                )
                if widths[k] <= floors[k]:
                    break
                widths[k] -= 1
                excess -= 1
            return shown, widths
        # The least kept goes; among equals the rightmost (the columns are ordered by interest).
        shown.remove(min(reversed(droppable), key=lambda i: columns[i].keep))


def terminal_width() -> int:
    """The terminal's width: ``$COLUMNS`` when set, else the terminal's own, else 80."""
    return shutil.get_terminal_size((80, 24)).columns


@dataclass(frozen=True)
class Listing:
    """Rows of one listing command, each given both as table cells and as a JSON object.

    ``columns`` are plain headers or :class:`Column` specs (a plain header is essential and never
    cut). On a terminal the table fits its width unless ``wide``: low-value columns are dropped
    and long cells cut with an ellipsis, and no line is longer than the terminal is wide.
    """

    columns: Sequence[str | Column]
    rows: Sequence[Sequence[str]]
    objects: Sequence[dict[str, Any]]
    empty: str
    wide: bool = False
    #: The cells a terminal table shows when not ``wide``, row by row (shorter forms of ``rows``,
    #: such as an age for a time); ``None``: ``rows``. A pipe and ``--wide`` get ``rows``.
    terminal_rows: Sequence[Sequence[str]] | None = None

    @property
    def specs(self) -> list[Column]:
        return [c if isinstance(c, Column) else Column(c) for c in self.columns]

    def print(self, *, as_json: bool, out: TextIO | None = None) -> None:
        stream = out or sys.stdout
        if not self.rows:
            print(f"tickwork: {self.empty}", file=sys.stderr)
            return
        if as_json:
            for obj in self.objects:
                stream.write(json.dumps(obj) + "\n")
        elif stream.isatty():
            self._table(stream)
        else:
            for row in self.rows:
                stream.write("\t".join(str(cell).replace("\t", " ") for cell in row) + "\n")

    def _table(self, stream: TextIO) -> None:
        specs = self.specs
        header = [c.header for c in specs]
        rows = self.rows if self.wide or self.terminal_rows is None else self.terminal_rows
        table = [header, *([str(c) for c in row] for row in rows)]
        natural = [max(len(row[i]) for row in table) for i in range(len(specs))]
        width = terminal_width()
        shown, widths = (list(range(len(specs))), natural) if self.wide else fit(specs, natural, width)
        mark = _ellipsis(stream)
        for row in table:
            cells = [_cut(row[i], w, mark).ljust(w) for i, w in zip(shown, widths, strict=True)]
            line = "  ".join(cells).rstrip()  # the last column is not padded: no trailing blanks
            if not self.wide and len(line) > width:
                line = _cut(line, width, mark)  # still too wide: never let the terminal wrap a row
            stream.write(line + "\n")
