"""How SQLite spells what differs (:class:`tickwork.sql.features.Operations`)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import ColumnElement, Text, bindparam, func, literal_column, select, type_coerce
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from tickwork.sql.features import Operations
from tickwork.sql.prepared import DirectPrepared, Prepared
from tickwork.sql.schema import UTCDateTime

# julianday('now') is fixed for the duration of one statement, like PostgreSQL's statement clock.
_NOW_MICROS = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)"


class JSONList(TypeDecorator[list[Any]]):
    """A list bound as JSON text (for ``json_each``)."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: list[Any] | None, dialect: Dialect) -> str | None:
        return None if value is None else json.dumps(value)


class SQLiteOperations(Operations):
    # One writer holds the whole file (BEGIN IMMEDIATE): no row lock to pass over.
    row_locks = False

    def db_now(self) -> ColumnElement[Any]:
        return type_coerce(literal_column(_NOW_MICROS), UTCDateTime)

    def plus_seconds(self, value: ColumnElement[Any], seconds: ColumnElement[Any]) -> ColumnElement[Any]:
        # .op keeps the operand's own type, so a bound datetime is still stored as microseconds.
        return value.op("+", return_type=UTCDateTime)(seconds * 1_000_000)

    def insert_ignore(self, table: Any) -> Any:
        return sqlite.insert(table).on_conflict_do_nothing()

    def one_of(self, column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
        # One JSON array unpacked by json_each (also this store's run inserts and ends): with an
        # expanding parameter SQLAlchemy rendered a placeholder and processed a parameter per id
        # of every claim (4 % of a node's engine thread in a burst, claims of 100).
        return column.in_(select(func.json_each(bindparam(name, type_=JSONList())).table_valued("value").c.value))

    def prepare(self, statement: Any, dialect: Dialect) -> Prepared:
        # The engine thread is a SQLite node's bottleneck in a burst (tickwork.sql.prepared).
        return DirectPrepared(statement, dialect)
