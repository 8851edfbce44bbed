"""How a job's exception is written into the run history: one helper for the engine, every
executor plugin and the test harness."""

from __future__ import annotations

import traceback

from ..structures import MAX_ERROR_CHARS


def format_exception(exc: BaseException, limit: int = MAX_ERROR_CHARS) -> str:
    """``Type: message`` plus a traceback, capped to ``limit`` characters (kept from the end)."""
    head = f"{type(exc).__qualname__}: {exc}"
    tb = "".join(traceback.format_exception(exc))
    text = f"{head}\n{tb}"
    if len(text) > limit:
        text = head[: limit // 2] + "\n... [traceback cut] ...\n" + tb[-(limit // 2) :]
    return text
