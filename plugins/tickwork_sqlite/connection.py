"""The SQLite store's one connection for its transactions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError


class OneConnection:
    """The store's transactions, one at a time, on one connection kept open between them.

    SQLite has one writer, and every transaction of this store begins ``IMMEDIATE`` (takes the
    write lock), so transactions of one process never ran side by side anyway: here they queue
    on a lock instead of in SQLite's busy handler. Keeping the connection saves what the pool
    does per transaction (checkout, and a rollback to reset the connection on return): in a
    SQLite burst that was about 370 µs of wall time per transaction, two per batch of fires
    (docs/benchmarks.md, "SQLite bursts, fourth round").

    After a transaction fails, its connection goes back to the pool (which drops it if the
    driver says it is broken) and the next transaction takes a fresh one.

    :param engine: the store's engine (read when a connection is needed)
    :param timeout: seconds a transaction waits for another thread's, like ``busy_timeout``
        waits for another process's
    """

    def __init__(self, engine: Callable[[], Engine], *, timeout: float) -> None:
        self._engine = engine
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn: Connection | None = None

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A transaction on the kept connection; committed if the block ends without an exception.

        :raises sqlalchemy.exc.OperationalError: when another thread's transaction outlasts the
            timeout (as the driver reports a database locked by another process)
        """
        if not self._lock.acquire(timeout=self._timeout):
            raise OperationalError(
                "BEGIN IMMEDIATE",
                (),
                TimeoutError(f"database is locked: another thread's transaction held it for {self._timeout:g} s"),
            )
        try:
            conn = self._conn
            if conn is None:
                conn = self._conn = self._engine().connect()
            try:
                with conn.begin():
                    yield conn
            except BaseException:
                self._conn = None
                conn.close()
                raise
        finally:
            self._lock.release()

    def close(self) -> None:
        """Give the connection back to the pool (before the engine is disposed)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
