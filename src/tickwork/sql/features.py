"""What a database can do and the few statements it spells its own way: one :class:`Features`
and one :class:`Operations` per database (Django's ``features``/``operations`` split), so the
shared store branches on capabilities, never on a dialect's name.

The ``RETURNING`` flags are read from SQLAlchemy's dialect once it has met the server
(``dialect.update_returning`` and friends: MariaDB >= 10.5 has ``INSERT``/``DELETE ... RETURNING``
but no ``UPDATE ... RETURNING``, MySQL none); the rest a store plugin declares in its
:class:`Operations` subclass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    CTE,
    JSON,
    ColumnElement,
    Connection,
    CursorResult,
    Delete,
    Executable,
    Table,
    bindparam,
    delete,
    select,
    type_coerce,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError

from .prepared import Prepared

#: SQLSTATEs of transient conflicts after which the transaction was rolled back and may be rerun.
TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})  # deadlock detected, serialization failure


def alike_in_every_row(rows: Sequence[Mapping[str, Any]], column: str) -> bool:
    """Whether ``column`` holds the same value in every row of a batch (equal and of one type,
    so ``1`` and ``True`` differ): a set-based :meth:`Operations.insert_many` binds such a column
    once. Values without their own equality (JSON text already encoded) are alike only when they
    are one object."""
    value = rows[0][column]
    kind = type(value)
    return all(row[column] is value or (type(row[column]) is kind and row[column] == value) for row in rows)


@dataclass(frozen=True)
class Features:
    """Capability flags the shared store branches on ("``RETURNING`` or write-then-read")."""

    #: ``UPDATE ... RETURNING``: claims, releases and writes answer in the statement that writes;
    #: without it they write, then read what they wrote in the same transaction.
    update_returning: bool
    #: ``INSERT ... RETURNING`` (a schedule added is returned by its insert).
    insert_returning: bool
    #: ``DELETE ... RETURNING``.
    delete_returning: bool
    #: :meth:`Operations.insert_ignore` with ``RETURNING`` returns only the rows it inserted
    #: (``ON CONFLICT DO NOTHING``); a claim relies on that to tell a fire already recorded.
    insert_ignore_returning: bool
    #: ``UPDATE ... SET`` assigns left to right, later expressions seeing earlier new values
    #: (MySQL): a comparison with a column being assigned runs as a statement of its own first.
    sets_in_order: bool

    @classmethod
    def of(cls, dialect: Dialect, operations: Operations) -> Features:
        """The features of ``dialect`` (initialized: connected once) as ``operations`` uses it."""
        return cls(
            update_returning=dialect.update_returning,
            insert_returning=dialect.insert_returning,
            delete_returning=dialect.delete_returning,
            insert_ignore_returning=dialect.insert_returning and operations.insert_ignore_skips_in_returning,
            sets_in_order=operations.sets_in_order,
        )


class Operations:
    """The statements and expressions a database spells its own way. A store plugin subclasses
    it; the shared store and the claim strategies (:class:`~tickwork.sql.claims.ClaimSQL`) ask it.

    Every method here builds SQL; none executes it except those given a connection.
    """

    #: See :attr:`Features.insert_ignore_returning`.
    insert_ignore_skips_in_returning: ClassVar[bool] = True
    #: See :attr:`Features.sets_in_order`.
    sets_in_order: ClassVar[bool] = False
    #: See :attr:`tickwork.sql.claims.ClaimSQL.row_locks`.
    row_locks: ClassVar[bool] = True
    #: The most values an ``IN`` list of one indexed lookup should hold (the hand-off checks'
    #: schedule ids): past its own limit a database may estimate the rows from the index's
    #: statistics instead of the index itself, and scan the table (MySQL/MariaDB:
    #: ``eq_range_index_dive_limit``, 200 ranges). Default: as many as a batch holds.
    indexed_in_list: ClassVar[int] = 1000
    #: The table statistics are refreshed with this statement (:meth:`analyze`).
    analyze_sql: ClassVar[str] = "ANALYZE tickwork_schedules"

    def db_now(self) -> ColumnElement[Any]:
        """SQL expression of the database clock, typed :class:`~tickwork.sql.schema.UTCDateTime`,
        fixed for the duration of one statement."""
        raise NotImplementedError

    def plus_seconds(self, value: ColumnElement[Any], seconds: ColumnElement[Any]) -> ColumnElement[Any]:
        """SQL for ``value + seconds`` on a UTCDateTime column."""
        raise NotImplementedError

    def answered(self, value: ColumnElement[Any]) -> ColumnElement[Any] | None:
        """The time ``value`` wrapped so that the UPDATE that writes it also answers it, in its
        reply to the driver (:meth:`answer`), without ``RETURNING``: ``None`` where the database
        has no such way (the default; a store that has ``RETURNING`` uses that)."""
        return None

    def answer(self, result: CursorResult[Any]) -> datetime:
        """The time :meth:`answered` wrapped, as the reply of the UPDATE that wrote it carried it."""
        raise NotImplementedError

    def insert_ignore(self, table: Any) -> Any:
        """An INSERT into ``table`` that skips rows violating a unique constraint."""
        raise NotImplementedError

    def materialized(self, cte: CTE) -> CTE:
        """``cte`` evaluated once, before the statement that uses it (PostgreSQL needs the
        ``MATERIALIZED`` keyword for that; most databases do it anyway)."""
        return cte

    def one_of(self, column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
        """``column IN`` the list bound as ``name``: an expanding parameter, one placeholder per value."""
        return column.in_(bindparam(name, expanding=True))

    def try_lock_row(self, row_id: ColumnElement[Any]) -> ColumnElement[bool]:
        """A transaction-scoped try-lock on ``row_id`` (the ``advisory`` strategy); only databases
        whose store lists that strategy have one."""
        raise NotImplementedError("this database has no transaction-scoped row try-lock")

    def presence_lock(self, name: str) -> Executable | None:
        """A statement that takes the session-level lock ``name`` without waiting and answers
        whether it was taken: a node's presence (:mod:`tickwork.sql.presence`). Default:
        ``None``, the database has none (nodes are judged by their heartbeats alone)."""
        return None

    def presence_free(self, name: str) -> ColumnElement[Any] | None:
        """An expression, true when no other session holds the session-level lock ``name``
        (it may take the lock until the transaction ends). ``None`` where
        :meth:`presence_lock` is."""
        return None

    def notify(self, conn: Connection) -> None:
        """Tell listening nodes that schedules changed, within the current transaction.
        Default: nothing to send (listeners poll)."""

    def lock_schedule_writes(self, conn: Connection) -> None:
        """Take a transaction-scoped lock that serializes ``write_schedules`` across nodes.
        The default takes none: the batched insert skips names another writer created and
        refuses those of another module, so the outcome is right, only possibly done twice."""

    def analyze(self, conn: Connection) -> None:
        """Refresh the planner statistics of the schedules table."""
        conn.exec_driver_sql(self.analyze_sql)

    def is_transient(self, error: DBAPIError) -> bool:
        """Whether ``error`` rolled the transaction back in a way worth rerunning it (a deadlock,
        a serialization failure). Default: the SQLSTATE the driver reports."""
        return getattr(error.orig, "sqlstate", None) in TRANSIENT_SQLSTATES

    def limited_delete(self, table: Any, where: ColumnElement[bool], limit: int) -> Delete:
        """``DELETE`` of at most ``limit`` rows of ``table`` matching ``where``, lowest ids first:
        ``WHERE id IN (SELECT id ... ORDER BY id LIMIT n)`` (PostgreSQL, SQLite)."""
        ids = select(table.c.id).where(where).order_by(table.c.id).limit(limit)
        return delete(table).where(table.c.id.in_(ids.scalar_subquery()))

    def text_as_json(self, text: ColumnElement[Any]) -> ColumnElement[Any]:
        """The JSON text ``text`` (an expression) as a value a JSON column takes. Default: the
        text itself, typed JSON (SQLite and MySQL take text for a JSON column; SQLite must not
        be given ``CAST(... AS JSON)``: a type name without TEXT in it has numeric affinity)."""
        return type_coerce(text, JSON)

    def insert_many(
        self, conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], *, skip_existing: bool = False
    ) -> None:
        """Insert ``rows`` (dicts of the same columns) into ``table`` in ``conn``'s transaction;
        with ``skip_existing``, rows violating a unique constraint are skipped
        (:meth:`insert_ignore`). Default: one executemany. A database may send the batch as
        one set-based statement instead (PostgreSQL: ``unnest`` of arrays)."""
        if rows:
            conn.execute(self.insert_ignore(table) if skip_existing else table.insert(), list(rows))

    def prepare(self, statement: Any, dialect: Dialect) -> Prepared:
        """How the store executes the statements it runs for every batch of fires (see
        :mod:`tickwork.sql.prepared`): through SQLAlchemy unless a database says otherwise."""
        return Prepared(statement)
