"""How a job's exception is written into the run history: one helper for the engine, every
executor plugin and the test harness."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import re
import traceback
from pathlib import Path
from types import TracebackType

from ..structures import MAX_ERROR_CHARS, split_error

#: A frame of a formatted traceback: its ``File "...", line N, in f`` line and the indented
#: lines under it (the source line, and the ``^^^^`` markers of Python 3.11+).
_FRAME = re.compile(r'^  File "(?P<path>[^"]*)", line \d+, in [^\n]*\n(?:    [^\n]*\n)*', re.MULTILINE)


def format_exception(exc: BaseException, limit: int = MAX_ERROR_CHARS) -> str:
    """``Type: message`` plus a traceback, capped to ``limit`` characters (kept from the end)."""
    head = f"{type(exc).__qualname__}: {exc}"
    tb = "".join(traceback.format_exception(exc))
    text = f"{head}\n{tb}"
    if len(text) > limit:
        text = head[: limit // 2] + "\n... [traceback cut] ...\n" + tb[-(limit // 2) :]
    return text


@functools.cache
def own_directories() -> tuple[str, ...]:
    """The directories of tickwork's core and of the plugins its distribution ships: frames in
    them are tickwork's machinery (thread pool, event loop, process runner), not the job."""
    found = {str(Path(__file__).resolve().parent.parent)}  # the tickwork package
    try:
        points = importlib.metadata.distribution("tickwork").entry_points
    except importlib.metadata.PackageNotFoundError:  # running from a checkout without installing
        points = importlib.metadata.EntryPoints()
    for point in points:
        if point.group != "tickwork":
            continue
        spec = importlib.util.find_spec(point.module.split(".")[0])
        for location in (spec.submodule_search_locations or []) if spec else []:
            found.add(str(Path(location).resolve()))
    return tuple(found)


def _is_own(path: str) -> bool:
    try:
        resolved = str(Path(path).resolve())
    except (OSError, ValueError):
        return False
    return any(resolved == d or resolved.startswith(d + os.sep) for d in own_directories())


def for_people(error: str) -> str:
    """A recorded error as shown to people: its summary, then its traceback without tickwork's
    own frames (how the job was called is noise to the job's author; the stored record keeps
    them). An error without a traceback is returned as it is."""
    summary, tb = split_error(error)
    if tb is None:
        return error
    kept = _FRAME.sub(lambda m: "" if _is_own(m.group("path")) else m.group(0), tb)
    return f"{summary}\n{kept}".rstrip("\n")


def job_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` from its first frame outside tickwork (the job's own), for logging a job's
    exception with ``exc_info``; ``tb`` itself when every frame is tickwork's."""
    first = tb
    while first is not None and _is_own(first.tb_frame.f_code.co_filename):
        first = first.tb_next
    return first or tb
