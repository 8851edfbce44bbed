"""Reading many run-time schedules from a file for ``tickwork jobs add --from FILE`` (and their
names for ``tickwork jobs remove|enable|disable --from FILE``).

Two formats: JSON lines (one object per line, blank lines and ``#`` comments skipped) and, for a
``.toml`` file, ``[[schedule]]`` tables. Each entry holds the arguments of ``Admin.add``. Every
problem of every entry is reported, each as ``FILE:LINE: ...``, so that all can be found and fixed
at once.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ConfigProblems, TickworkError
from ..structures import DEFAULT_NAMESPACE, ScheduleSpec
from .options import ALIASES, NAMES

REQUIRED = ("name", "expression", "target")
#: A schedule's options (:mod:`tickwork.scheduling.options`; their aliases are read too) and its
#: namespace (docs/teams.md; default: the command's ``--namespace``).
OPTIONAL = (*NAMES, "namespace")
_TABLE_HEADER = re.compile(r"^\s*\[\[\s*schedule\s*\]\]")


#: Problems a bad file lists one by one; the rest are counted.
MAX_LISTED = 20


@dataclass(frozen=True)
class Entry:
    line: int
    fields: dict[str, Any]


class Problems:
    """The problems of one schedule file, each ``FILE:LINE: ...``. A file of thousands of entries
    is fixed in one pass, not one run of the command per bad line."""

    def __init__(self, path: Path, effect: str) -> None:
        self.path = path
        #: What the file was read for, as "nothing was ...": "added", "removed".
        self.effect = effect
        self.found: list[tuple[int, str]] = []

    def add(self, line: int, message: str) -> None:
        self.found.append((line, message))

    def check(self) -> None:
        """:raises tickwork.errors.ConfigError: the problem, when there is one
        :raises tickwork.errors.ConfigProblems: every problem in the order of the file's lines
            (the first :data:`MAX_LISTED`), when there are several"""
        found = [f"{self.path}:{line}: {message}" for line, message in sorted(self.found, key=lambda p: p[0])]
        if len(found) == 1:
            raise ConfigError(found[0])
        if found:
            listed = found[:MAX_LISTED]
            more = f" (the first {MAX_LISTED} are listed)" if len(found) > MAX_LISTED else ""
            raise ConfigProblems(f"{self.path}: {len(found)} problems{more}; nothing was {self.effect}", listed)


def load(path: Path, build: Callable[..., ScheduleSpec]) -> tuple[list[Entry], list[ScheduleSpec]]:
    """The entries of ``path`` and their specs, each validated with ``build`` (``Admin.spec``)
    before anything is written.

    :raises tickwork.errors.ConfigError: an unreadable file or invalid TOML; otherwise every
        problem of every entry (invalid JSON, not an object, unknown or missing fields, what
        ``build`` refuses, a repeated name), each as ``FILE:LINE: ...``
    """
    problems = Problems(path, "added")
    entries = _entries(path, problems)
    specs: list[ScheduleSpec] = []
    lines: dict[tuple[str, str], int] = {}
    for entry in entries:
        unknown = sorted(set(entry.fields) - set(REQUIRED) - set(OPTIONAL) - set(ALIASES))
        missing = [f for f in REQUIRED if f not in entry.fields]
        if unknown:
            problems.add(entry.line, f"unknown field(s) {', '.join(unknown)}; fields: {', '.join(REQUIRED + OPTIONAL)}")
        if missing:
            problems.add(entry.line, f"missing field(s) {', '.join(missing)}")
        if unknown or missing:
            continue
        try:
            spec = build(**entry.fields)
        except (TickworkError, ValueError, TypeError) as exc:
            problems.add(entry.line, str(exc))
            continue
        if spec.key in lines:
            problems.add(entry.line, f"schedule name {spec.name!r} is also on line {lines[spec.key]}")
            continue
        lines[spec.key] = entry.line
        specs.append(spec)
    problems.check()
    if not specs:
        raise ConfigError(f"{path}: no schedules in the file")
    return entries, specs


def names(path: Path, effect: str, namespace: str = DEFAULT_NAMESPACE) -> list[str]:
    """The schedule names of ``path`` (for ``jobs remove|enable|disable --from``), in file order,
    each once. Only ``name`` is read, and ``namespace`` where an entry gives one: the command acts
    in ``namespace`` (``--namespace``), so an entry of another is refused, not acted on as the
    schedule of its name in the command's namespace.

    :param effect: what the command does, for "nothing was ...": ``removed``, ``enabled``, ...

    :raises tickwork.errors.ConfigError: an unreadable file or invalid TOML; otherwise every
        entry that is not an object or has no name, each as ``FILE:LINE: ...``
    """
    problems = Problems(path, effect)
    entries = _entries(path, problems)
    found: dict[str, None] = {}
    for entry in entries:
        name = entry.fields.get("name")
        given = entry.fields.get("namespace", namespace)
        if not isinstance(name, str) or not name:
            problems.add(entry.line, f"expected a schedule name (a non-empty string in field name), got {name!r}")
        elif given != namespace:
            problems.add(
                entry.line, f"{name}: namespace {given!r}, not this command's {namespace!r} (--namespace {given})"
            )
        else:
            found[name] = None
    problems.check()
    if not found:
        raise ConfigError(f"{path}: no schedules in the file")
    return list(found)


def _entries(path: Path, problems: Problems) -> list[Entry]:
    """The entries of ``path``, each with the line it starts on (an unusable line is a problem)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the schedule file: {exc}") from exc
    return _toml_entries(path, text) if path.suffix == ".toml" else _json_lines(text, problems)


def _json_lines(text: str, problems: Problems) -> list[Entry]:
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(number, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        if not isinstance(value, dict):
            problems.add(number, f"expected a JSON object, got {type(value).__name__}")
            continue
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
