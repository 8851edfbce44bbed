"""Keeping Alembic's INFO lines out of an embedding application's log (see :func:`quiet_alembic`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_quiet_lock = threading.Lock()
_quiet_depth = 0
_quiet_saved = logging.NOTSET


@contextmanager
def quiet_alembic() -> Iterator[None]:
    """Keep Alembic's INFO lines ("Context impl ...", "Running upgrade ...") out of the host
    application's log while tickwork migrates its own tables; warnings still pass. The level is
    restored afterwards, so the application's own Alembic runs log as it configured them."""
    global _quiet_depth, _quiet_saved
    logger = logging.getLogger("alembic")
    with _quiet_lock:
        if _quiet_depth == 0:
            _quiet_saved = logger.level
            if logger.getEffectiveLevel() < logging.WARNING:
                logger.setLevel(logging.WARNING)
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0:
                logger.setLevel(_quiet_saved)
