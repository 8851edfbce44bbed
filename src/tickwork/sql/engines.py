"""SQLAlchemy engine setup shared by the SQL store plugins and the jobqueue plugin, so the two
sides cannot drift apart (pool sizes, pre-ping, SQLite's pragmas and write locking, the JSON
serializer that writes pre-encoded JSON as it is: :mod:`tickwork.sql.jsontext`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event

from . import jsontext
from .filemode import create_private
from .prepared import driver_execute


def sqlite_file_engine(path: str | Path, *, busy_timeout: float, immediate: bool = True) -> Engine:
    """An engine on a SQLite file shared by several processes of one machine.

    WAL mode lets readers run beside the single writer. With ``immediate`` every transaction
    starts with ``BEGIN IMMEDIATE``, so two processes never both read a snapshot and then race to
    upgrade it to a write (in WAL mode that upgrade fails at once instead of waiting).

    The file is created with mode 0600 if missing (:mod:`tickwork.sql.filemode`: it holds the code
    nodes run and its arguments); an existing file keeps its mode.

    :param busy_timeout: seconds a writer waits for another process's write lock
    """
    create_private(Path(path))
    engine = create_engine(
        f"sqlite+pysqlite:///{path}", connect_args={"timeout": busy_timeout}, json_serializer=jsontext.dumps
    )
    busy_ms = int(busy_timeout * 1000)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # BEGIN is issued below (or by SQLAlchemy)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {busy_ms}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    if immediate:

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # On the driver's connection: through exec_driver_sql this was a third of what a
            # transaction costs SQLAlchemy's Python, twice per batch of fires.
            driver_execute(conn, "BEGIN IMMEDIATE", (), sqlite3.Error)

    return engine


def pooled_engine(
    url: str | URL,
    *,
    pool_size: int,
    pre_ping: bool = False,
    connect_args: dict[str, Any] | None = None,
    isolation_level: str | None = None,
) -> Engine:
    """An engine on a database server with a connection pool; connects lazily.

    :param pre_ping: test each connection on checkout. Off by default: it costs a round trip per
        transaction (5 % of a node's CPU in a burst); a connection broken by a server restart fails
        one statement and is invalidated with the pool, and the store's retry takes a fresh one.
        Code that does not retry its statements turns it on.
    :param isolation_level: the transactions' isolation level (default: the database's)
    """
    extra: dict[str, Any] = {} if isolation_level is None else {"isolation_level": isolation_level}
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=2,
        pool_pre_ping=pre_ping,
        connect_args=connect_args or {},
        json_serializer=jsontext.dumps,
        **extra,
    )
