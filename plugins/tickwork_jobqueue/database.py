"""The queue database: URLs, engines, bounded transactions, the database clock, table creation."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import URL, Column, Connection, Engine, func, inspect, select
from sqlalchemy.exc import DBAPIError

from tickwork.errors import ConfigError
from tickwork.sql import dburl
from tickwork.sql.engines import pooled_engine, sqlite_file_engine
from tickwork.sql.quiet import quiet_alembic

from .schema import ADDED_COLUMNS, jobs, metadata

# Importing Alembic's operations logs "setup plugin ..." at INFO: keep that out of the log of an
# application that embeds a node (as tickwork.sql does for its own import of Alembic).
with quiet_alembic():
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

log = logging.getLogger("tickwork.jobqueue")

#: Seconds a SQLite writer waits for another process's write lock when no run timeout applies.
DEFAULT_BUSY_TIMEOUT = 30.0
# Two-int advisory lock key serialising CREATE TABLE across processes on PostgreSQL (the two-int
# key space never overlaps the single-bigint one tickwork's advisory claim strategy uses).
_DDL_LOCK = (0x7469636B, 0x6A6F6271)  # "tick", "jobq"
# SQLSTATEs of PostgreSQL's statement and lock timeouts.
_PG_TIMEOUTS = frozenset({"57014", "55P03"})


def parse_url(url: str, where: str = "url") -> URL:
    """Check a queue URL and pin its driver (pysqlite, psycopg 3).

    Accepts ``sqlite:///relative/path``, ``sqlite:////absolute/path``, ``postgresql://...``,
    ``postgres://...`` and ``postgresql+psycopg://...``.

    :raises tickwork.errors.ConfigError: naming ``where`` and what is wrong
    """
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f'{where}: the jobqueue needs its queue database, e.g. url = "sqlite:///jobs.db"')
    # Never echo the URL: after ${ENV} expansion it holds the password.
    parsed = dburl.parse(url, where, "sqlite:///PATH or postgresql://user:password@host/db")
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite":
        if driver not in ("", "pysqlite"):
            raise ConfigError(f"{where}: SQLite driver {driver!r} is not supported; use sqlite:///PATH")
        if not parsed.database or parsed.database == ":memory:":
            # Workers are other processes: they could never see an in-memory database.
            raise ConfigError(f"{where}: a SQLite queue needs a file shared with the workers, e.g. sqlite:///jobs.db")
        return parsed.set(drivername="sqlite+pysqlite")
    if backend in ("postgresql", "postgres"):
        if driver not in ("", "psycopg"):
            raise ConfigError(f"{where}: PostgreSQL driver {driver!r} is not supported; use postgresql+psycopg://")
        return parsed.set(drivername="postgresql+psycopg")
    raise ConfigError(f"{where}: unsupported database {backend!r}; expected sqlite:///PATH or postgresql://...")


def describe(url: URL) -> str:
    """The URL without its passwords (user info and query, :func:`tickwork.sql.dburl.masked`),
    for messages and logs."""
    return dburl.masked(url)


def create_queue_engine(url: URL, *, pool_size: int = 5) -> Engine:
    """An engine for ``url`` (from :func:`parse_url`); connects lazily.

    SQLite connections run in WAL mode and start every transaction with ``BEGIN IMMEDIATE``, so
    the check-then-insert of an enqueue and the select-then-update of a claim each hold the
    write lock from their first read: two processes can never both see the same job as free.
    """
    if url.get_backend_name() == "sqlite":
        assert url.database is not None
        parent = Path(url.database).parent
        if not parent.is_dir():
            raise ConfigError(f"url: the directory {str(parent)!r} of the SQLite queue {describe(url)} does not exist")
        # Created 0600 by the shared setup (tickwork.sql.filemode).
        return sqlite_file_engine(url.database, busy_timeout=DEFAULT_BUSY_TIMEOUT)
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ConfigError("a PostgreSQL queue needs psycopg: pip install 'tickwork[postgres]'") from exc
    # Pre-ping: unlike the store, the queue's statements are not retried after a stale connection.
    return pooled_engine(url, pool_size=pool_size, pre_ping=True, connect_args={"connect_timeout": 5})


@contextmanager
def transaction(engine: Engine, timeout: float | None = None) -> Iterator[Connection]:
    """A transaction whose waits for locks (and, on PostgreSQL, statements) last at most ``timeout`` s.

    Exceeding it raises a :class:`~sqlalchemy.exc.DBAPIError` for which :func:`is_timeout` is true;
    the transaction is rolled back, so nothing it did is kept.
    """
    wait = DEFAULT_BUSY_TIMEOUT if timeout is None else timeout
    millis = max(1, int(wait * 1000))
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            # The wait happens in BEGIN IMMEDIATE itself, so bound it before the transaction starts.
            conn.connection.driver_connection.execute(f"PRAGMA busy_timeout = {millis}")  # type: ignore[union-attr]
        with conn.begin():
            if not sqlite and timeout is not None:
                value = f"{millis}ms"
                conn.execute(
                    select(
                        func.set_config("lock_timeout", value, True), func.set_config("statement_timeout", value, True)
                    )
                )
            yield conn


def is_timeout(exc: DBAPIError) -> bool:
    """Whether ``exc`` is a lock or statement timeout rather than another database error."""
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate in _PG_TIMEOUTS
    message = str(exc.orig).lower()
    return "database is locked" in message or "database is busy" in message


def db_now(conn: Connection) -> datetime:
    """The time to stamp rows with: the server clock on PostgreSQL (shared by every host), the
    local clock on SQLite (whose file, and so every process using it, is on this machine)."""
    if conn.dialect.name == "postgresql":
        value: datetime = conn.execute(select(func.statement_timestamp())).scalar_one()
        return value.astimezone(UTC)
    return datetime.now(UTC)


def ensure_table(engine: Engine, *, create: bool = True) -> None:
    """Create the queue table and its indexes if missing (``create``), or check that they exist.

    :raises tickwork.errors.ConfigError: when ``create`` is false and the table is missing
    """
    if not create:
        if not inspect(engine).has_table(jobs.name):
            raise ConfigError(
                f"create_table = false, but the database has no {jobs.name} table; create it "
                "(see docs/plugins.md) or set create_table = true"
            )
        with engine.connect() as conn:
            missing = _missing_columns(conn)
            if missing:
                statements = "; ".join(_add_column_sql(conn, name) for name in missing)
                raise ConfigError(
                    f"create_table = false, but the {jobs.name} table lacks column(s) {', '.join(missing)} "
                    f"(added in a later tickwork); add them ({statements}) or set create_table = true"
                )
        return
    with transaction(engine) as conn:
        if conn.dialect.name == "postgresql":
            # Two processes starting at once would otherwise both try CREATE TABLE (or ADD COLUMN).
            conn.execute(select(func.pg_advisory_xact_lock(*_DDL_LOCK)))
        metadata.create_all(conn)
        missing = _missing_columns(conn)
        if missing:
            with quiet_alembic():
                operations = Operations(MigrationContext.configure(conn))
                for name in missing:
                    operations.add_column(jobs.name, Column(name, jobs.c[name].type, nullable=True))
            log.warning("jobqueue: added column(s) %s to the existing %s table", ", ".join(missing), jobs.name)


def _missing_columns(conn: Connection) -> list[str]:
    """The columns of :data:`~.schema.ADDED_COLUMNS` the existing table lacks."""
    present = {column["name"] for column in inspect(conn).get_columns(jobs.name)}
    return [name for name in ADDED_COLUMNS if name not in present]


def _add_column_sql(conn: Connection, name: str) -> str:
    """The statement that adds column ``name`` by hand (for the error of ``create_table = false``)."""
    return f"ALTER TABLE {jobs.name} ADD COLUMN {name} {jobs.c[name].type.compile(dialect=conn.dialect)}"
