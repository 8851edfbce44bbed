"""The embedded SQLite store: one file shared safely by several processes on one machine.

WAL mode lets readers run beside the single writer; every write transaction starts with
``BEGIN IMMEDIATE`` so two processes never both read a snapshot and then race to upgrade it to a
write (in WAL mode that upgrade fails at once instead of waiting on the busy timeout).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    literal_column,
    type_coerce,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.sqlite.base import SQLiteDialect

from tickwork.errors import ConfigError, StoreError
from tickwork.numbers import number
from tickwork.sql.dialects import SQLTraits, declare
from tickwork.sql.engines import sqlite_file_engine
from tickwork.sql.schema import UTCDateTime
from tickwork.sql.store import SQLStore
from tickwork.sql.watch import ChangeWatcher, poll_loop
from tickwork.structures import Finish

log = logging.getLogger("tickwork.sqlite")

# julianday('now') is fixed for the duration of one statement, like PostgreSQL's statement clock.
_NOW_MICROS = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"

# No timestamp type: times are integer microseconds since the epoch.
declare(SQLiteDialect, SQLTraits(epoch_micros=True))


class SQLiteStore(SQLStore):
    """SQLite store.

    :param path: database file (created if missing; its directory must exist)
    :param busy_timeout: seconds a writer waits for another process's write lock
    :param poll_interval: seconds between checks for changes made by other processes
    :param create: create the schema in a new, empty file (an older schema still needs
        ``tickwork db upgrade``)
    """

    database_label = "sqlite"
    claim_strategies = ("optimistic", "unique-fire", "mark")
    options = {
        "path": str,
        "claim": str,
        "batch_size": int,
        "busy_timeout": (int, float),
        "poll_interval": (int, float),
        "create": bool,
    }

    def __init__(
        self,
        path: str = "tickwork.db",
        *,
        claim: str | None = None,
        batch_size: int = 100,
        busy_timeout: float = 30.0,
        poll_interval: float = 0.1,
        create: bool = True,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(claim=claim, batch_size=batch_size, clock=clock)
        if not path:
            raise ConfigError("path: must name a database file")
        self.path = Path(path)
        # A poll every few milliseconds would keep a core busy; waits beyond an hour mean a typo.
        self.busy_timeout = number("busy_timeout", busy_timeout, low=0.0, high=3600.0, unit="seconds")
        self.poll_interval = number("poll_interval", poll_interval, low=0.01, high=60.0, unit="seconds")
        self.create_empty = create
        self._watcher = ChangeWatcher("tickwork-sqlite-watch", join_timeout=2)

    def describe(self) -> str:
        return f"SQLite database {str(self.path)!r}"

    def database_exists(self) -> bool:
        return self.path.is_file()

    def _create_engine(self) -> Engine:
        if not self.path.parent.exists():
            raise StoreError(f"cannot open {self.describe()}: directory {str(self.path.parent)!r} does not exist")
        # The file is created 0600 by the shared setup (tickwork.sql.filemode).
        return sqlite_file_engine(self.path, busy_timeout=self.busy_timeout)

    def _db_now(self) -> ColumnElement[Any]:
        return type_coerce(literal_column(_NOW_MICROS), UTCDateTime)

    def _plus_seconds(self, value: ColumnElement[Any], seconds: ColumnElement[Any]) -> ColumnElement[Any]:
        # .op keeps the operand's own type, so a bound datetime is still stored as microseconds.
        return value.op("+", return_type=UTCDateTime)(seconds * 1_000_000)

    def refresh_statistics(self) -> None:
        with self._tx() as conn:
            conn.exec_driver_sql("ANALYZE tickwork_schedules")

    def insert_ignore(self, table: Any) -> Any:
        return sqlite.insert(table).on_conflict_do_nothing()

    def _release_and_end(self, conn: Connection, finishes: Sequence[Finish]) -> set[int]:
        # BEGIN IMMEDIATE holds the write lock, so the fences read here cannot change before the
        # UPDATEs. (One UPDATE ... RETURNING built per row: 1,791 fires/s in a 10,000-fire burst,
        # 0.557 s node CPU per 1,000 fires; read-then-executemany: 3,946 and 0.261.)
        return self._release_and_end_by_fences(conn, finishes)

    def _notify(self, conn: Connection) -> None:
        """Nothing to send: listeners watch the file's ``data_version``."""

    def listen(self, wake: Callable[[], None]) -> None:
        self._watcher.start(self._watch, wake)

    def _watch(self, wake: Callable[[], None], stop: threading.Event) -> None:
        # PRAGMA data_version changes whenever another connection commits: a cheap poll of the
        # WAL index, no disk reads. It also fires on other nodes' claims; a spurious wake only
        # costs the engine one "what is due next" query.
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as exc:
            log.error("cannot watch %s for changes: %s", self.describe(), exc)
            return
        try:
            poll_loop(lambda: conn.execute("PRAGMA data_version").fetchone()[0], self.poll_interval)(wake, stop)
        finally:
            conn.close()

    def close(self) -> None:
        self._watcher.stop()
        super().close()
