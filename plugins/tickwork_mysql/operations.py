"""How MySQL / MariaDB spell what differs (:class:`tickwork.sql.features.Operations`).

Neither has ``UPDATE ... RETURNING`` (MariaDB >= 10.5 has it for INSERT and DELETE, which
SQLAlchemy reports), so the shared store writes, then reads what it wrote, in one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    CursorResult,
    Delete,
    Executable,
    Table,
    column,
    delete,
    func,
    literal,
    literal_column,
    select,
    table,
    text,
    type_coerce,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.exc import DBAPIError

from tickwork.sql.features import Operations
from tickwork.sql.migrations import VERSION_TABLE
from tickwork.sql.schema import UTCDateTime, from_epoch_micros

from . import jsontable

# NOW(6) is fixed for the duration of one statement, like PostgreSQL's statement_timestamp().
_NOW_MICROS = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)"
#: MySQL error numbers after which the transaction was rolled back and may be rerun.
# Deadlock found. Not 1205, lock wait timeout: the wait was innodb_lock_wait_timeout already
# (lock_timeout), for a lock held that long (a stray SELECT ... FOR UPDATE, a long transaction),
# and running the transaction again waited for it 8 times over (8 s where lock_timeout says 1 s).
_TRANSIENT_ERRORS = {1213}
#: Seconds a deployment sync waits for another node's (lock_schedule_writes), within the
#: statement timeout: PostgreSQL's waits with no lock timeout at all.
SYNC_LOCK_WAIT = 3600
#: The schema's version row, locked to serialize deployment syncs (lock_schedule_writes).
_SCHEMA_VERSION = table(VERSION_TABLE, column("version_num"))


class MySQLOperations(Operations):
    # ON DUPLICATE KEY UPDATE: MariaDB's RETURNING would also return the rows it skipped.
    insert_ignore_skips_in_returning = False
    # eq_range_index_dive_limit is 200 ranges; the hand-off checks test two statuses per
    # schedule. Past it MariaDB estimated half the history from the index's statistics and scanned
    # it: 2.4 s for 500 schedules beside 2 million finished runs, against 4 ms in lists of 100.
    indexed_in_list = 100
    # MySQL evaluates SET left to right on the new values.
    sets_in_order = True
    analyze_sql: ClassVar[str] = "ANALYZE TABLE tickwork_schedules"

    def db_now(self) -> ColumnElement[Any]:
        return type_coerce(literal_column(_NOW_MICROS), UTCDateTime)

    def plus_seconds(self, value: ColumnElement[Any], seconds: ColumnElement[Any]) -> ColumnElement[Any]:
        return value.op("+", return_type=UTCDateTime)(seconds * 1_000_000)

    def answered(self, value: ColumnElement[Any]) -> ColumnElement[Any] | None:
        # LAST_INSERT_ID(expr) returns expr and makes it the session's last insert id, which the
        # server sends in the UPDATE's OK packet (the driver's lastrowid): no read after the write.
        return type_coerce(func.last_insert_id(value), UTCDateTime)

    def answer(self, result: CursorResult[Any]) -> datetime:
        # The schema keeps times as microseconds since the epoch here (UTCDateTime).
        return from_epoch_micros(int(result.lastrowid))

    def insert_ignore(self, table: Any) -> Any:
        # ON DUPLICATE KEY UPDATE of the key itself: skips duplicates only, where INSERT IGNORE
        # would also turn other errors (truncation, bad values) into warnings.
        stmt = mysql.insert(table)
        key = next(iter(table.primary_key.columns))
        return stmt.on_duplicate_key_update({key.name: key})

    def insert_many(
        self, conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], *, skip_existing: bool = False
    ) -> None:
        # One statement per batch whose rows are one JSON document (jsontable.py), where the
        # server has JSON_TABLE and the document carries every value exactly.
        shaped = jsontable.document(table, rows, conn.dialect) if rows and jsontable.available(conn.dialect) else None
        if shaped is None:
            super().insert_many(conn, table, rows, skip_existing=skip_existing)
            return
        columns, varying, parameters = shaped
        conn.execute(jsontable.statement(table, columns, varying, skip_existing, conn.dialect), parameters)

    def is_transient(self, error: DBAPIError) -> bool:
        args: tuple[Any, ...] = getattr(error.orig, "args", ())
        return bool(args) and args[0] in _TRANSIENT_ERRORS

    def analyze(self, conn: Connection) -> None:
        conn.exec_driver_sql(self.analyze_sql).all()

    def lock_schedule_writes(self, conn: Connection) -> None:
        # A second node starting at the same moment waits here, then plans from what the first
        # one wrote (READ COMMITTED: the next read sees it). Not GET_LOCK: a named lock belongs
        # to the session and would outlive the transaction on a pooled connection. A locking
        # read of the schema's version row (one row in every migrated database) ends with the
        # transaction. The store's lock_timeout is for rows; this wait is meant (a sync takes
        # seconds), bounded by the statement timeout only: the session's lock wait is lifted for
        # this read and put back after it.
        conn.execute(
            text("SET @tickwork_lock_wait = @@SESSION.innodb_lock_wait_timeout, SESSION innodb_lock_wait_timeout = :w"),
            {"w": SYNC_LOCK_WAIT},
        )
        try:
            conn.execute(select(_SCHEMA_VERSION.c.version_num).with_for_update()).all()
        finally:
            conn.execute(text("SET SESSION innodb_lock_wait_timeout = @tickwork_lock_wait"))

    def presence_lock(self, name: str) -> Executable | None:
        # A named lock belongs to the session: it ends with the connection, as presence must.
        return select(func.GET_LOCK(literal(name), 0))

    def presence_free(self, name: str) -> ColumnElement[Any] | None:
        return func.IS_FREE_LOCK(literal(name)) == 1

    def limited_delete(self, table: Any, where: ColumnElement[bool], limit: int) -> Delete:
        # DELETE ... LIMIT n: MySQL refuses LIMIT in an IN (subquery) of the table deleted from.
        return delete(table).where(where).with_dialect_options(mysql_limit=limit)
