"""One-line descriptions of failures while importing a job module: where (file:line) and what,
so that ``tickwork run`` can say ``tickwork: error: ...`` instead of printing a traceback."""

from __future__ import annotations

import importlib.util
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


def short_path(filename: str) -> str:
    """``filename`` relative to the working directory when it is under it."""
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive (Windows)
        return filename
    return filename if relative.startswith("..") else relative


def function_location(func: Callable[..., Any]) -> str:
    """``file:line`` of a function's definition (its first decorator), or ``?``."""
    code = getattr(func, "__code__", None)
    if code is None:
        return "?"
    return f"{short_path(code.co_filename)}:{code.co_firstlineno}"


def _module_root(module: str) -> Path | None:
    """The file of a module, or the directory of a package, without importing it again."""
    top = module.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    origin = Path(spec.origin)
    return origin.parent if spec.submodule_search_locations else origin


def failure_location(module: str, exc: BaseException) -> str | None:
    """``file:line`` where importing ``module`` failed: a syntax error's own position, else the
    deepest traceback frame inside the module's files (else the deepest frame of any file)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{short_path(exc.filename)}:{exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    if not frames:
        return None
    root = _module_root(module)
    if root is not None:
        inside = [f for f in frames if Path(f.filename) == root or root in Path(f.filename).parents]
        if inside:
            frames = inside
    last = frames[-1]
    return f"{short_path(last.filename)}:{last.lineno}"


def describe_failure(exc: BaseException) -> str:
    """``Type: message`` on one line (a syntax error without its position, given separately)."""
    if isinstance(exc, SyntaxError):
        message = exc.msg
    else:
        message = str(exc)
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return " ".join(text.split())
