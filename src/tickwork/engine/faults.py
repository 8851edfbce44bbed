"""Containing faults: one line per error for users, a traceback once per kind of error in logs."""

from __future__ import annotations

import logging
from collections.abc import Callable

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


#: Seconds before the first pass after a store fault: an outage often lasts one statement (a
#: backend killed, a failover of a connection pooler), and a pass that fails costs one refused
#: connection attempt.
STORE_RETRY_FIRST = 0.1
#: The longest wait between passes while the store is unreachable. Each pass is the probe: its
#: first statement fails at once while the database is down (a refused connection, "the database
#: system is starting up"), so probing this often is cheap, and the node resumes at most this long
#: after the database answers again. A doubling back-off to 10 s cost up to 4 s of fires after a
#: PostgreSQL restart (benchmarks/failover_chaos.py).
STORE_RETRY_MAX = 0.5
#: The back-off after any other fault of a pass: doubling from the first to the longest.
FAULT_RETRY_FIRST = 0.5
FAULT_RETRY_MAX = 10.0
#: Seconds between two warnings while the store stays unreachable (one line per probe would flood).
OUTAGE_WARN_EVERY = 10.0


class PassBackoff:
    """How long the loop waits after a failed pass, and the log lines of a store outage.

    A store fault (the database away) is retried quickly, at most :data:`STORE_RETRY_MAX` apart:
    a pass is a cheap probe. Any other fault of a pass (a bug, a plugin that raises) doubles from
    :data:`FAULT_RETRY_FIRST` to :data:`FAULT_RETRY_MAX`: it is unlikely to go away by itself.
    """

    def __init__(self, logger: logging.Logger, monotonic: Callable[[], float]) -> None:
        self.logger = logger
        self.monotonic = monotonic
        self.wait = 0.0
        #: Monotonic time of the first store fault of the outage in progress (None: no outage).
        self._outage_since: float | None = None
        self._warned_at = 0.0

    def store_fault(self, exc: BaseException) -> float:
        """A pass failed on the store: the seconds to wait before the next one (the probe)."""
        now = self.monotonic()
        self.wait = min(max(self.wait * 2, STORE_RETRY_FIRST), STORE_RETRY_MAX)
        if self._outage_since is None:
            self._outage_since, self._warned_at = now, now
            self.logger.warning(
                "cannot reach the store (%s); trying again every %.1fs at most until it answers", exc, STORE_RETRY_MAX
            )
        elif now - self._warned_at >= OUTAGE_WARN_EVERY:
            self._warned_at = now
            self.logger.warning("still cannot reach the store after %.1fs (%s)", now - self._outage_since, exc)
        return self.wait

    def other_fault(self) -> float:
        """Any other fault of a pass: the seconds to wait before the next one."""
        self.wait = min(max(self.wait * 2, FAULT_RETRY_FIRST), FAULT_RETRY_MAX)
        return self.wait

    def succeeded(self) -> None:
        """A pass went through: log the end of an outage, forget the back-off."""
        if self._outage_since is not None:
            self.logger.warning("database reachable again after %.1fs; resuming", self.monotonic() - self._outage_since)
        elif self.wait:
            self.logger.warning("engine pass succeeded again; resuming")
        self._outage_since = None
        self.wait = 0.0
