"""Containing faults: one line per error for users, a traceback once per kind of error in logs."""

from __future__ import annotations

import logging

from ..plugin.tracebacks import format_exception as format_exception  # re-exported for older imports


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line (what the history and ``tickwork jobs list`` show)."""
    text = " ".join(str(exc).split()) or "(no message)"
    return f"{type(exc).__qualname__}: {text[:1000]}"


class OnceLogger:
    """Logs an error with its traceback the first time its kind (where, type, message) is seen,
    and on one line after that: a fault that repeats every pass must not flood the log."""

    def __init__(self, logger: logging.Logger, limit: int = 1000) -> None:
        self.logger = logger
        self.limit = limit
        self._seen: set[tuple[str, str, str]] = set()

    def log(self, where: str, exc: BaseException) -> None:
        key = (where, type(exc).__qualname__, str(exc)[:200])
        if key in self._seen:
            self.log_line(where, exc)
            return
        if len(self._seen) < self.limit:
            self._seen.add(key)
        self.logger.error("%s: %s", where, describe(exc), exc_info=exc)

    def log_line(self, where: str, exc: BaseException) -> None:
        self.logger.error("%s: %s", where, describe(exc))
