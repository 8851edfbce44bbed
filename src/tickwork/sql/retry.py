"""Rerunning a store operation after a transient database error."""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from sqlalchemy.exc import DBAPIError

from ..errors import StoreError

log = logging.getLogger("tickwork.store")

#: Runs of an operation before a transient error propagates (a store may ask for more).
ATTEMPTS = 3

F = TypeVar("F", bound=Callable[..., Any])


class Retrying(Protocol):
    """What :func:`transient_retry` needs of the store whose method it wraps."""

    transient_attempts: int

    def is_transient(self, error: DBAPIError) -> bool: ...


def transient_retry(method: F) -> F:
    """Rerun a store operation after a deadlock, a serialization failure, or a connection the
    pool handed out stale (e.g. after a database restart; no pre-ping round trip is spent on
    every checkout). Anything else, and the last failure, propagates as :class:`StoreError`."""

    @functools.wraps(method)
    def wrapper(self: Retrying, *args: Any, **kwargs: Any) -> Any:
        attempts = self.transient_attempts
        for attempt in range(1, attempts + 1):
            try:
                return method(self, *args, **kwargs)
            except StoreError as exc:
                cause = exc.__cause__
                transient = isinstance(cause, DBAPIError) and (cause.connection_invalidated or self.is_transient(cause))
                if attempt == attempts or not transient:
                    raise
                log.info("%s: retrying after a transient database error: %s", method.__name__, exc)
                # Jittered: two transactions that deadlocked must not meet again in lockstep.
                time.sleep(0.01 * attempt * random.uniform(0.5, 1.5))
        raise AssertionError("unreachable")

    return wrapper  # type: ignore[return-value]
