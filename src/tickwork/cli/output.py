"""How the CLI prints listings: aligned columns under a header on a terminal, tab-separated rows
(no header) when piped, or one JSON object per line with ``--json``; an empty result is said on
stderr so that stdout stays empty for scripts."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from .. import structures


def iso_z(value: datetime | None) -> str:
    """ISO-8601 in UTC with a trailing ``Z``; ``-`` for no value."""
    return "-" if value is None else structures.iso_z(value)


def one_line(text: str | None, limit: int = 100) -> str:
    """The first line of ``text``, cut to ``limit`` characters; ``-`` for nothing."""
    if not text:
        return "-"
    first = text.strip().splitlines()[0] if text.strip() else "-"
    return first if len(first) <= limit else first[: limit - 3] + "..."


@dataclass(frozen=True)
class Listing:
    """Rows of one listing command, each given both as table cells and as a JSON object."""

    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    objects: Sequence[dict[str, Any]]
    empty: str

    def print(self, *, as_json: bool, out: TextIO | None = None) -> None:
        stream = out or sys.stdout
        if not self.rows:
            print(f"tickwork: {self.empty}", file=sys.stderr)
            return
        if as_json:
            for obj in self.objects:
                stream.write(json.dumps(obj) + "\n")
        elif stream.isatty():
            widths = [max(len(str(cell)) for cell in column) for column in zip(self.header, *self.rows, strict=True)]
            for row in (self.header, *self.rows):
                # The last column is not padded: no trailing blanks.
                cells = [str(c).ljust(w) for c, w in zip(row[:-1], widths, strict=False)] + [str(row[-1])]
                stream.write("  ".join(cells).rstrip() + "\n")
        else:
            for row in self.rows:
                stream.write("\t".join(str(cell).replace("\t", " ") for cell in row) + "\n")
