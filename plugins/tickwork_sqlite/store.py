"""The embedded SQLite store: one file shared safely by several processes on one machine.

WAL mode lets readers run beside the single writer; every write transaction starts with
``BEGIN IMMEDIATE`` so two processes never both read a snapshot and then race to upgrade it to a
write (in WAL mode that upgrade fails at once instead of waiting on the busy timeout).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Text,
    bindparam,
    func,
    select,
    type_coerce,
    update,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.sqlite.base import SQLiteDialect

from tickwork.errors import StoreError
from tickwork.sql.claims import RUN_COLUMNS
from tickwork.sql.claims.base import started_runs
from tickwork.sql.dialects import SQLTraits, declare
from tickwork.sql.engines import sqlite_file_engine
from tickwork.sql.schema import UTCDateTime, epoch_micros, runs, schedules
from tickwork.sql.store import SQLStore
from tickwork.sql.watch import ChangeWatcher, poll_loop
from tickwork.structures import Claim, Finish
from tickwork.structures import cap_error as cap

from .connection import OneConnection
from .operations import SQLiteOperations
from .settings import SQLiteSettings

log = logging.getLogger("tickwork.sqlite")


def _micros(moment: datetime | None) -> int | None:
    """A time as the store keeps it (UTCDateTime on SQLite), for the JSON batches."""
    return None if moment is None else epoch_micros(moment)


#: The fields of each end in the JSON batch of :meth:`SQLiteStore._release_and_end`, in order.
_BATCH_FIELDS = ("id", "seq", "next", "run_id", "status", "error", "started", "finished")

# No timestamp type: times are integer microseconds since the epoch.
declare(SQLiteDialect, SQLTraits(epoch_micros=True))


class SQLiteStore(SQLStore):
    """SQLite store.

    :param path: database file (created if missing; its directory must exist); the other
        options (``busy_timeout``, ``poll_interval``, ``create``, ...) are the keys of
        :class:`~tickwork_sqlite.settings.SQLiteSettings`
    """

    database_label = "sqlite"
    operations_class = SQLiteOperations
    section = SQLiteSettings
    settings: SQLiteSettings
    claim_strategies = SQLiteSettings.claim.options

    def __init__(self, path: str | None = None, *, clock: Callable[[], datetime] | None = None, **options: Any) -> None:
        super().__init__(clock=clock, **({} if path is None else {"path": path}), **options)
        self.path = Path(self.settings.path)
        self.busy_timeout = self.settings.busy_timeout
        self.poll_interval = self.settings.poll_interval
        self.create_empty = self.settings.create
        self._watcher = ChangeWatcher("tickwork-sqlite-watch", join_timeout=2)
        self._connection = OneConnection(lambda: self.engine, timeout=self.busy_timeout)
        #: (st_dev, st_ino) of the file as opened; None before open() or when it cannot be read.
        self._identity: tuple[int, int] | None = None
        self._lost: str | None = None
        self._lost_lock = threading.Lock()
        self._opened_path = str(self.path)

    def describe(self) -> str:
        return f"SQLite database {str(self.path)!r}"

    def database_exists(self) -> bool:
        return self.path.is_file()

    def _create_engine(self) -> Engine:
        if not self.path.parent.exists():
            raise StoreError(f"cannot open {self.describe()}: directory {str(self.path.parent)!r} does not exist")
        # The file is created 0600 by the shared setup (tickwork.sql.filemode).
        return sqlite_file_engine(self.path, busy_timeout=self.busy_timeout)

    def open(self, *, check_schema: bool = True) -> None:
        super().open(check_schema=check_schema)
        # Absolute now: SQLite resolved the path when it opened the file, so an application that
        # changes its working directory later has not lost it.
        self._opened_path = os.path.abspath(self.path)
        self._identity = self._file_identity()
        self._lost = None

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self._opened_path)
        except OSError:
            return None
        return (found.st_dev, found.st_ino)

    def _check_file(self) -> None:
        """Refuse the transaction if the path no longer names the file this store opened.

        A file deleted (``rm tickwork.db*``) or replaced (a restore moved into place) under an
        open connection is not noticed by SQLite: it goes on reading and writing the unlinked
        file, and every claim and run it records is lost. The check is one ``stat`` (about a
        microsecond) per transaction, which costs hundreds. Not reopened: for a deleted path
        that would create an empty database and silently forget every schedule's state, and
        whether a replacement is meant to be used is the operator's call (restart the node).
        """
        if self._identity is None:
            return
        if self._lost is None:
            now = self._file_identity()
            if now == self._identity:
                return
            what = "deleted" if now is None else "replaced by another file"
            with self._lost_lock:  # several threads may notice at once: one ERROR line
                if self._lost is None:
                    self._lost = (
                        f"{self.describe()} was {what} while this process had it open: writing on would go to "
                        "the unlinked file and be lost, so this store refuses every transaction; restore the "
                        "file and restart the node (a node started on a missing path creates a new, empty "
                        "database)"
                    )
                    log.error("%s", self._lost)
        raise StoreError(self._lost)

    def _begin(self) -> AbstractContextManager[Connection]:
        self._check_file()
        return self._connection.begin()

    def _release_and_end(self, conn: Connection, finishes: Sequence[Finish]) -> tuple[set[int], set[int]]:
        # SQLite has no row locks (one writer at a time, behind busy_timeout): nothing is ever
        # passed over as locked. Two fixed statements whatever the batch: the batch travels as
        # one JSON array (encoded by the json module's C encoder, unpacked by json_each), so no
        # per-row parameter binding in Python. (One UPDATE ... RETURNING built per row: 0.557 s
        # node CPU per 1,000 fires in a 10,000-fire burst; a fenced read then two executemany:
        # 0.261; see benchmarks.md for these.)
        batch = json.dumps(
            [
                [
                    f.claim.schedule_id,
                    f.claim.claim_seq,
                    _micros(f.next_fire),
                    f.claim.run_id,
                    f.outcome.status.value,
                    cap(f.outcome.error),
                    _micros(f.started_at),
                    _micros(f.finished_at),
                ]
                for f in finishes
            ]
        )
        released = set(self._prepared("sqlite_release", self._release_statement).scalars(conn, {"batch": batch}))
        self.statements += 1
        if released:
            self._prepared("sqlite_end_runs", self._end_statement).rows(conn, {"batch": batch, "ids": sorted(released)})
            self.statements += 1
        return released, set()

    @staticmethod
    def _batch_rows(*names: str) -> Any:
        """The named fields (of :data:`_BATCH_FIELDS`) of the rows of the ``batch`` JSON array.
        Only those a statement reads: SQLite evaluates every column of the subquery for every
        row, and extracting all eight in both statements made the two a quarter dearer (a direct
        sqlite3 loop, 100-row batches: 14.5 against 10.6 µs per end)."""
        each = func.json_each(bindparam("batch", type_=Text)).table_valued("value").alias("j")
        return select(
            *(func.json_extract(each.c.value, f"$[{_BATCH_FIELDS.index(name)}]").label(name) for name in names)
        ).subquery("f")

    def _release_statement(self) -> Any:
        f = self._batch_rows("id", "seq", "next")
        return (
            update(schedules)
            .where(schedules.c.id == f.c.id, schedules.c.claim_seq == f.c.seq, schedules.c.state == "running")
            .values(**self.release_values(type_coerce(f.c.next, UTCDateTime)))
            .returning(schedules.c.id)
        )

    def _end_statement(self) -> Any:
        f = self._batch_rows("id", "run_id", "status", "error", "started", "finished")
        return (
            update(runs)
            .where(runs.c.id == f.c.run_id, self.operations.one_of(f.c.id, "ids"))
            .values(
                status=f.c.status,
                error=f.c.error,
                finished_at=func.coalesce(type_coerce(f.c.finished, UTCDateTime), self.now_expr()),
                started_at=func.coalesce(type_coerce(f.c.started, UTCDateTime), runs.c.started_at),
            )
        )

    def _record_runs(
        self, conn: Connection, node_id: str, rows: Sequence[Mapping[Any, Any]], run_ids: dict[int, int]
    ) -> list[Claim]:
        # INSERT ... SELECT from the rows this transaction just claimed (BEGIN IMMEDIATE: nobody
        # else wrote them since), by id (one_of: one JSON array, no per-row parameters in Python).
        need = [r["id"] for r in rows if r["id"] not in run_ids]
        if need:
            inserted = self._prepared("sqlite_record_runs", self._record_runs_statement).rows(
                conn, {"ids": need, "node": node_id}
            )
            # By position (runs.c.id, runs.c.schedule_id): a Row's attribute access costs more.
            run_ids = run_ids | {schedule_id: run_id for run_id, schedule_id in inserted}
            self.statements += 1
        return self._claims(rows, run_ids)

    def _record_runs_statement(self) -> Any:
        fires = started_runs(
            schedules.c.id,
            schedules.c.next_fire,
            schedules.c.claim_seq,
            bindparam("node", type_=Text),
            schedules.c.claimed_at,
            schedules.c.version,
        ).where(self.operations.one_of(schedules.c.id, "ids"), schedules.c.state == "running")
        return (
            sqlite.insert(runs)
            .from_select(list(RUN_COLUMNS), fires)
            .on_conflict_do_nothing()
            .returning(runs.c.id, runs.c.schedule_id)
        )

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
        self._connection.close()
        super().close()
        self._identity = None
