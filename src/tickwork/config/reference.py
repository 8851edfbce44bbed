"""The key tables of docs/configuration.md, rendered from the declarations.

Each table's rows sit between two markers, the rest of the page is written by hand::

    <!-- BEGIN GENERATED [scheduler]: python -m tickwork.config.reference --write docs/configuration.md -->
    | key | type | default | meaning |
    ...
    <!-- END GENERATED [scheduler] -->

``python -m tickwork.config.reference --write FILE`` rewrites every marked table from the
declarations (the core's and those of the installed plugins); ``--check FILE`` exits 1 naming the
stale ones; without an option it prints every table.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .declarations import Table
from .tables import ConfigTables, declared_tables

COMMAND = "python -m tickwork.config.reference --write docs/configuration.md"
_BLOCK = re.compile(
    r"<!-- BEGIN GENERATED \[(?P<table>[a-z0-9_.]+)\][^\n]*-->\n.*?<!-- END GENERATED \[(?P=table)\] -->",
    re.S,
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_table(table: Table) -> str:
    """The Markdown table of ``table``'s keys: key, type and range, default, meaning."""
    lines = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for key, setting in table.settings().items():
        cells = (f"`{key}`", setting.type_text(), setting.default_text(), setting.meaning())
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def begin_marker(name: str) -> str:
    return f"<!-- BEGIN GENERATED [{name}]: {COMMAND} -->"


def end_marker(name: str) -> str:
    return f"<!-- END GENERATED [{name}] -->"


def generated_block(name: str, table: Table) -> str:
    """The markers and, between them (blank lines around it: a table ends at a blank line), the
    table of ``name``."""
    return f"{begin_marker(name)}\n\n{render_table(table)}\n{end_marker(name)}"


def marked_tables(text: str) -> list[str]:
    """The tables ``text`` has a generated block for, in order."""
    return [m.group("table") for m in _BLOCK.finditer(text)]


def render(text: str, tables: ConfigTables | None = None) -> str:
    """``text`` with every generated block rewritten from the declarations in ``tables`` (by
    default the core's and the installed plugins').

    :raises KeyError: for a block naming a table nobody declares
    """
    declared = (tables or declared_tables()).tables()

    def block(match: re.Match[str]) -> str:
        name = match.group("table")
        if name not in declared:
            raise KeyError(f"docs: a generated block names [{name}], which no loaded plugin declares")
        return generated_block(name, declared[name])

    return _BLOCK.sub(block, text)


def stale(text: str, tables: ConfigTables | None = None) -> list[str]:
    """The generated blocks of ``text`` that differ from the declarations."""
    fresh = render(text, tables)
    old = {m.group("table"): m.group(0) for m in _BLOCK.finditer(text)}
    new = {m.group("table"): m.group(0) for m in _BLOCK.finditer(fresh)}
    return [name for name in old if old[name] != new[name]]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tickwork.config.reference",
        description="Render the key tables of docs/configuration.md from the declarations.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", type=Path, help="rewrite the generated tables of FILE")
    group.add_argument("--check", metavar="FILE", type=Path, help="exit 1 if a generated table of FILE is stale")
    args = parser.parse_args(argv)
    if args.write is None and args.check is None:
        for name, table in declared_tables().tables().items():
            if table.settings():
                print(generated_block(name, table) + "\n")
        return 0
    path: Path = args.write or args.check
    text = path.read_text(encoding="utf-8")
    if args.check is not None:
        names = stale(text)
        if names:
            print(f"{path}: stale tables: {', '.join(names)}; run: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    fresh = render(text)
    if fresh != text:
        path.write_text(fresh, encoding="utf-8")
        print(f"{path}: rewrote {', '.join(stale(text))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
