"""``--node-import tickwork_bench.statementkinds``: every node counts its SQL statements by kind.

Set ``TICKWORK_STATEMENT_KINDS=DIR``; each node then writes ``DIR/<pid>.json`` at exit: its
statements (as the bench counts them: an executemany the driver sends row by row counts per row)
grouped by the statement's text with every literal list folded, counted from the node's ready
line on. ``python -m tickwork_bench.statementkinds DIR --fires N`` adds the nodes' files up and
prints each kind's statements per fire, the largest first: where a cell's statements go
(docs/benchmarks.md uses it for MySQL's statements per fire).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from tickwork_bench import nodeproc

ENV = "TICKWORK_STATEMENT_KINDS"
WIDTH = 400  # characters of a statement's folded text that name its kind

_PLACEHOLDERS = re.compile(r"(%\(\w+\)s|%s|\?|:\w+|\$\d+)(\s*,\s*(%\(\w+\)s|%s|\?|:\w+|\$\d+))+")
_ROWS = re.compile(r"\(\s*(\?|%s|%\(\w+\)s)\s*(,\s*(\?|%s|%\(\w+\)s)\s*)*\)(\s*,\s*\(.*?\))+")
_SPACE = re.compile(r"\s+")


def kind(statement: str) -> str:
    """A statement's text with whitespace collapsed and lists of parameters folded to one, so that
    one statement with 3 or 300 ids counts as one kind."""
    text = _SPACE.sub(" ", statement).strip()
    text = _ROWS.sub("(...), ...", text)
    text = _PLACEHOLDERS.sub("...", text)
    return text[:WIDTH]


class KindCounter:
    """Statements by kind, from every engine of the process."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def on_execute(
        self, _conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
    ) -> None:
        n = nodeproc.statements_sent(cursor, statement, parameters, context, executemany)
        with self._lock:
            self.counts[kind(statement)] += n

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            data = dict(self.counts)
        (directory / f"{os.getpid()}.json").write_text(json.dumps(data))


def install(directory: Path) -> KindCounter:
    counter = KindCounter()
    event.listen(Engine, "before_cursor_execute", counter.on_execute)
    reset = nodeproc.Meter.reset

    def reset_too(self: nodeproc.Meter) -> None:
        reset(self)
        counter.reset()  # count from the ready line on, as the bench's own counters do

    nodeproc.Meter.reset = reset_too  # type: ignore[method-assign]
    atexit.register(counter.write, directory)
    return counter


def summary(directory: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    for path in sorted(directory.glob("*.json")):
        total.update(json.loads(path.read_text()))
    return total


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m tickwork_bench.statementkinds", description=__doc__.splitlines()[0])
    p.add_argument("directory", type=Path, help="the TICKWORK_STATEMENT_KINDS directory of a run")
    p.add_argument("--fires", type=int, required=True, help="fires of the run (the bench's 'fired')")
    p.add_argument("--top", type=int, default=25, help="kinds to print (default 25)")
    args = p.parse_args(argv)
    total = summary(args.directory)
    statements = sum(total.values())
    print(f"{statements} statements, {statements / args.fires:.4f} per fire, {len(total)} kinds")
    for text, n in total.most_common(args.top):
        print(f"{n / args.fires:8.4f}  {n:7d}  {text}")


if __name__ == "__main__":
    main()
elif os.environ.get(ENV):
    install(Path(os.environ[ENV]))
