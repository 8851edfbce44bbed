"""How PostgreSQL spells what differs (:class:`tickwork.sql.features.Operations`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    CTE,
    ColumnElement,
    Connection,
    Executable,
    Integer,
    Table,
    cast,
    func,
    literal,
    select,
    type_coerce,
)
from sqlalchemy.dialects import postgresql

from tickwork.sql.features import Operations
from tickwork.sql.schema import UTCDateTime

from . import unnest

CHANNEL = "tickwork_changes"
# First key of the two-key advisory lock space, so tickwork's locks cannot meet an application's.
LOCK_NAMESPACE = 0x7469636B  # "tick"
#: First key of the nodes' presence locks (LOCK_NAMESPACE + 1 serializes schedule writes).
PRESENCE_NAMESPACE = LOCK_NAMESPACE + 2


def presence_key(name: str) -> int:
    """The second key of a presence lock: 32 bits of the name's hash. Two names meeting on one key
    only ever make a dead node look present (one cannot take the lock the other holds), which
    falls back to judging it by node_ttl."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=4).digest(), "big", signed=True)


class PostgresOperations(Operations):
    def db_now(self) -> ColumnElement[Any]:
        # statement_timestamp(), not now(): now() is frozen at transaction start.
        return type_coerce(func.statement_timestamp(), UTCDateTime)

    def plus_seconds(self, value: ColumnElement[Any], seconds: ColumnElement[Any]) -> ColumnElement[Any]:
        return type_coerce(value + func.make_interval(0, 0, 0, 0, 0, 0, seconds), UTCDateTime)

    def insert_ignore(self, table: Any) -> Any:
        return postgresql.insert(table).on_conflict_do_nothing()

    def text_as_json(self, text: ColumnElement[Any]) -> ColumnElement[Any]:
        # PostgreSQL has no assignment cast from text to json.
        return cast(text, postgresql.JSON)

    def insert_many(
        self, conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]], *, skip_existing: bool = False
    ) -> None:
        # One statement per batch, not one per row (unnest.py).
        if not rows:
            return
        shape = unnest.split(table, rows)
        if shape is None:  # values psycopg cannot put in one array: an executemany
            super().insert_many(conn, table, rows, skip_existing=skip_existing)
        else:
            columns, arrays, documents = shape
            conn.execute(
                unnest.statement(table, columns, arrays, documents, skip_existing),
                unnest.parameters(rows, columns, arrays, documents),
            )

    def materialized(self, cte: CTE) -> CTE:
        return cte.prefix_with("MATERIALIZED")

    def try_lock_row(self, row_id: ColumnElement[Any]) -> ColumnElement[bool]:
        return func.pg_try_advisory_xact_lock(literal(LOCK_NAMESPACE, Integer), cast(row_id % 2147483647, Integer))

    def presence_lock(self, name: str) -> Executable | None:
        return select(func.pg_try_advisory_lock(*self._presence_keys(name)))

    def presence_free(self, name: str) -> ColumnElement[Any] | None:
        # Takes it for the rest of the transaction when free: harmless, a node taking its own
        # lock back at that moment takes it at its next beat.
        return func.pg_try_advisory_xact_lock(*self._presence_keys(name))

    @staticmethod
    def _presence_keys(name: str) -> tuple[ColumnElement[int], ColumnElement[int]]:
        # The two-key form: a key space apart from the one-bigint locks an application may take.
        return literal(PRESENCE_NAMESPACE, Integer), literal(presence_key(name), Integer)

    def notify(self, conn: Connection) -> None:
        # Inside the changing transaction: sleeping nodes wake the moment it commits.
        conn.execute(select(func.pg_notify(CHANNEL, "")))

    def lock_schedule_writes(self, conn: Connection) -> None:
        # A second node starting at the same moment waits here, then plans from what the first
        # one wrote: no conflicting inserts, no work done twice. The store's lock_timeout is for
        # rows; this wait is meant (a sync takes seconds), bounded by statement_timeout only.
        conn.execute(select(func.set_config("lock_timeout", "0", True)))
        conn.execute(select(func.pg_advisory_xact_lock(literal(LOCK_NAMESPACE + 1, Integer), literal(0, Integer))))
