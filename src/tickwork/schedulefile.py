"""Reading many run-time schedules from a file for ``tickwork jobs add --from FILE``.

Two formats: JSON lines (one object per line, blank lines and ``#`` comments skipped) and, for a
``.toml`` file, ``[[schedule]]`` tables. Each entry holds the arguments of ``Admin.add``. Every
problem is reported as ``FILE:LINE: ...`` so the entry can be found and fixed.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError, TickworkError
from .structures import ScheduleSpec

REQUIRED = ("name", "expression", "target")
OPTIONAL = ("kind", "tz", "executor", "args", "timeout", "retries", "retry_backoff", "misfire", "enabled")
_TABLE_HEADER = re.compile(r"^\s*\[\[\s*schedule\s*\]\]")


@dataclass(frozen=True)
class Entry:
    line: int
    fields: dict[str, Any]


def read_entries(path: Path) -> list[Entry]:
    """The entries of ``path``, each with the line it starts on.

    :raises tickwork.errors.ConfigError: unreadable file, invalid JSON/TOML, an entry that is not
        an object, or unknown/missing fields (``FILE:LINE: ...``)
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the schedule file: {exc}") from exc
    entries = _toml_entries(path, text) if path.suffix == ".toml" else _json_lines(path, text)
    for entry in entries:
        unknown = sorted(set(entry.fields) - set(REQUIRED) - set(OPTIONAL))
        if unknown:
            raise ConfigError(
                f"{path}:{entry.line}: unknown field(s) {', '.join(unknown)}; fields: {', '.join(REQUIRED + OPTIONAL)}"
            )
        missing = [f for f in REQUIRED if f not in entry.fields]
        if missing:
            raise ConfigError(f"{path}:{entry.line}: missing field(s) {', '.join(missing)}")
    return entries


def build_specs(path: Path, entries: list[Entry], build: Callable[..., ScheduleSpec]) -> list[ScheduleSpec]:
    """Validate every entry with ``build`` (``Admin.spec``) before anything is written.

    :raises tickwork.errors.ConfigError: the first invalid entry or a repeated name, as ``FILE:LINE: ...``
    """
    specs: list[ScheduleSpec] = []
    lines: dict[str, int] = {}
    for entry in entries:
        try:
            spec = build(**entry.fields)
        except (TickworkError, ValueError, TypeError) as exc:
            raise ConfigError(f"{path}:{entry.line}: {exc}") from exc
        if spec.name in lines:
            raise ConfigError(f"{path}:{entry.line}: schedule name {spec.name!r} is also on line {lines[spec.name]}")
        lines[spec.name] = entry.line
        specs.append(spec)
    if not specs:
        raise ConfigError(f"{path}: no schedules in the file")
    return specs


def _json_lines(path: Path, text: str) -> list[Entry]:
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: invalid JSON: {exc.msg} (column {exc.colno})") from exc
        if not isinstance(value, dict):
            raise ConfigError(f"{path}:{number}: expected a JSON object, got {type(value).__name__}")
        entries.append(Entry(number, value))
    return entries


def _toml_entries(path: Path, text: str) -> list[Entry]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    other = sorted(set(document) - {"schedule"})
    if other:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(other)}; write each schedule as a [[schedule]] table")
    tables = document.get("schedule", [])
    if not isinstance(tables, list):
        raise ConfigError(f"{path}: schedule: write each schedule as a [[schedule]] table")
    # tomllib keeps no positions; the n-th [[schedule]] header is where the n-th table starts.
    starts = [n for n, line in enumerate(text.splitlines(), 1) if _TABLE_HEADER.match(line)]
    return [Entry(starts[i] if i < len(starts) else 1, dict(table)) for i, table in enumerate(tables)]
