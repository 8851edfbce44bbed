"""Scrubbing httpx's and httpcore's own log records.

httpx logs every request URL at INFO, query string included, and httpcore's DEBUG traces carry
response headers. A filter on each of their loggers rewrites a record's message before any handler
sees it: URLs lose user info, query and fragment, and the secrets of every started executor are
replaced by ``[redacted]``. A filter rather than a level, so operators who want the request lines
still get them.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref

from .redact import Redactor, safe_url

#: The loggers httpx 0.2x and httpcore 1.x write to (a logger's filters do not apply to its children).
LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")


class ScrubFilter(logging.Filter):
    """Rewrites each record's message: safe URLs, secrets of every registered redactor removed."""

    def __init__(self) -> None:
        super().__init__("tickwork-http-scrub")
        self._lock = threading.Lock()
        # Weak: a redactor lives as long as its executor, and a shut-down executor's secrets need no guard.
        self._redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()

    def add(self, redact: Redactor) -> None:
        with self._lock:
            self._redactors.add(redact)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:
            # A record that cannot be formatted would print its raw arguments; drop them instead.
            text = str(record.msg)
        text = _URL.sub(lambda match: safe_url(match.group(0)), text)
        with self._lock:
            redactors = list(self._redactors)
        for redact in redactors:
            text = redact(text)
        record.msg, record.args = text, None
        return True


_FILTER = ScrubFilter()
_installed = False
_install_lock = threading.Lock()


def install(redact: Redactor | None = None) -> None:
    """Attach the scrubbing filter to httpx's and httpcore's loggers (once) and register ``redact``."""
    global _installed
    with _install_lock:
        if not _installed:
            for name in LOGGERS:
                logging.getLogger(name).addFilter(_FILTER)
            _installed = True
    if redact is not None:
        _FILTER.add(redact)
