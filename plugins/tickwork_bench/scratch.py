"""Scratch stores the benchmark owns: a SQLite file per cell, or a PostgreSQL database it creates
and drops. Seeding, arming (making schedules due) and reading the history back live here."""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import shutil
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, bindparam, func, insert, select, text, update
from sqlalchemy.engine import make_url

from tickwork.errors import ConfigError, StoreError
from tickwork.plugin.manager import default_manager
from tickwork.sql.dburl import masked
from tickwork.sql.engines import pooled_engine, sqlite_file_engine
from tickwork.sql.schema import metadata, runs, schedules
from tickwork.sql.store import SQLStore
from tickwork.structures import DEFAULT_NAMESPACE, bucket_of

from .jobs import NOOP_TARGET

#: Every table of the schema, emptied between cells (a table a later migration adds included).
_TABLES = tuple(table.name for table in metadata.sorted_tables)

#: Rows per INSERT batch when seeding.
SEED_CHUNK = 5000
#: Schedules that are not due fire between one hour and one day from now.
IDLE_FROM = timedelta(hours=1)
IDLE_SPAN = timedelta(days=1)
#: Fires once a year: nothing refires while a cell runs.
YEARLY = "0 0 1 1 *"


def registered_store(plugin: str, **options: Any) -> SQLStore:
    """A store built through the plugin registry, as a node builds it (the benchmark imports no
    store plugin)."""
    store = default_manager().stores.get(plugin)(**options)
    if not isinstance(store, SQLStore):
        raise ConfigError(f"the {plugin!r} store is not a SQL store; tickwork bench needs one")
    return store


@dataclass(frozen=True)
class Armed:
    """Schedules made due: ``t0`` is the due instant, ``db_now`` the database clock when armed."""

    t0: datetime
    db_now: datetime
    mono: float
    #: How long after ``t0`` the nodes were woken (non-zero only if arming took longer than the lead).
    woken_late_ms: float = 0.0

    def local_deadline(self, after_t0: float) -> float:
        """The monotonic time ``after_t0`` seconds past ``t0``."""
        return self.mono + (self.t0 - self.db_now).total_seconds() + after_t0


def _ms_since(mono: float, db_now: datetime, t0: datetime) -> float:
    """Milliseconds from ``t0`` to now, given that ``db_now`` was the database time at ``mono``."""
    return (time.monotonic() - mono - (t0 - db_now).total_seconds()) * 1000.0


@dataclass(frozen=True)
class MeasuredRun:
    """A run of a cell as the harness reads it back from the history, to measure its lag."""

    schedule_id: int
    scheduled_for: datetime
    started_at: datetime | None
    finished_at: datetime | None
    status: str


@dataclass(frozen=True)
class DueSet:
    """The schedules a cell makes due: their trigger, and each one's offset from the due instant.

    :param expression: the trigger expression of the schedule with index ``i`` (0-based)
    :param offset: how long after the armed instant schedule ``i`` first fires
    """

    kind: str
    expression: Callable[[int], str]
    offset: Callable[[int], timedelta] | None = None
    #: what the schedules run: the no-op local job, or a task of a hand-off executor
    executor: str = "local"
    target: str = NOOP_TARGET
    #: the namespace of the schedules (docs/teams.md)
    namespace: str = DEFAULT_NAMESPACE


def schedule_rows(
    first: int,
    count: int,
    *,
    kind: str,
    expression: Callable[[int], str],
    next_fire: Callable[[int], Any],
    prefix: str,
    executor: str = "local",
    target: str = NOOP_TARGET,
    namespace: str = DEFAULT_NAMESPACE,
) -> list[dict[str, Any]]:
    """Rows for the schedules table, UTC: by default the no-op job on the local executor."""
    now = datetime.now(UTC)
    rows = []
    for i in range(first, first + count):
        name = f"{prefix}-{i:08d}"
        rows.append(
            {
                "name": name,
                "namespace": namespace,
                "module": None,
                "bucket": bucket_of(name),
                "trigger_kind": kind,
                "expression": expression(i),
                "timezone": "UTC",
                "executor": executor,
                "target": target,
                "arguments": {},
                "timeout_s": 300.0,
                "misfire": None,
                "retries": 0,
                "enabled": True,
                "next_fire": next_fire(i),
                "state": "idle",
                "claim_seq": 0,
                "created_at": now,
                "updated_at": now,
            }
        )
    return rows


class Scratch(ABC):
    """A store the benchmark may wipe at will.

    Cells call :meth:`prepare` (empty tables), :meth:`seed`, then :meth:`arm` once the nodes are up.
    """

    #: The store plugin name nodes are configured with.
    plugin: str

    def __init__(self) -> None:
        self._engine: Engine | None = None
        self._store: SQLStore | None = None
        self._last_due_id = 0
        self._due: DueSet | None = None

    @property
    def store(self) -> SQLStore:
        """The scratch's store (its clock expression, statistics and change announcements)."""
        if self._store is None:
            raise StoreError("scratch store is not prepared; call prepare() first")
        return self._store

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise StoreError("scratch store is not prepared; call prepare() first")
        return self._engine

    @abstractmethod
    def prepare(self, index: int) -> None:
        """An empty, migrated store for cell number ``index``."""

    @abstractmethod
    def store_options(self) -> dict[str, Any]:
        """Options (besides ``claim``/``batch_size``) that point a node's store at this scratch."""

    def now(self) -> datetime:
        """The database clock, read with the store's own expression on the scratch's engine
        (which never takes SQLite's write lock)."""
        with self.engine.connect() as conn:
            value = conn.execute(select(self.store.now_expr())).scalar_one()
        assert isinstance(value, datetime)
        return value

    def _analyze(self) -> None:
        self.store.refresh_statistics()

    def _notify(self) -> None:
        """Wake sleeping nodes after arming."""
        self.store.announce_changes()

    @abstractmethod
    def close(self) -> None:
        """Remove everything the scratch created."""

    def describe(self) -> dict[str, Any]:
        """Facts about the database for the results file."""
        return {"store": self.plugin}

    def seed(self, due: int, stored: int, due_set: DueSet, more: Sequence[tuple[int, DueSet]] = ()) -> None:
        """Insert ``due`` schedules of ``due_set`` (and of each ``(count, due set)`` of ``more``,
        also made due by :meth:`arm`), then ``stored - due`` others; none is due yet.

        The others fire between one hour and one day from now; the due ones two days from now until
        :meth:`arm` moves them.
        """
        now = self.now()
        idle = max(0, stored - due)
        step = IDLE_SPAN / max(idle, 1)
        parked = now + 2 * IDLE_SPAN
        self._due = due_set
        with self.engine.begin() as conn:
            for count, chosen in ((due, due_set), *more):
                for first in range(0, count, SEED_CHUNK):
                    rows = schedule_rows(
                        first,
                        min(SEED_CHUNK, count - first),
                        kind=chosen.kind,
                        expression=chosen.expression,
                        next_fire=lambda _i: parked,
                        prefix="due",
                        executor=chosen.executor,
                        target=chosen.target,
                        namespace=chosen.namespace,
                    )
                    conn.execute(insert(schedules), rows)
            self._last_due_id = int(conn.execute(select(func.coalesce(func.max(schedules.c.id), 0))).scalar_one())
            for first in range(0, idle, SEED_CHUNK):
                rows = schedule_rows(
                    first,
                    min(SEED_CHUNK, idle - first),
                    kind="cron",
                    expression=lambda _i: YEARLY,
                    next_fire=lambda i: now + IDLE_FROM + step * i,
                    prefix="idle",
                )
                conn.execute(insert(schedules), rows)
        self._analyze()

    def arm(self, lead: float, *, align: bool, fresh_stats: bool = True, at: datetime | None = None) -> Armed:
        """Make every due schedule due at the database time ``now + lead`` (rounded up to a whole
        second when ``align``), or at ``at`` when given, then wake the nodes.

        With ``fresh_stats`` the planner statistics are refreshed after the fire times are set and
        before the nodes are woken, as autovacuum's ANALYZE would have done before a real burst;
        without, the claims run on statistics taken before the schedules were due (``--stale-stats``).
        """
        db_now = self.now()
        mono = time.monotonic()
        t0 = db_now + timedelta(seconds=lead)
        if align:
            t0 = datetime.fromtimestamp(math.ceil(t0.timestamp()), UTC)
        if at is not None:
            t0 = at
        offset = self._due.offset if self._due is not None else None
        with self.engine.begin() as conn:
            if offset is None:
                conn.execute(update(schedules).where(schedules.c.id <= self._last_due_id).values(next_fire=t0))
            else:
                ids = conn.scalars(
                    select(schedules.c.id).where(schedules.c.id <= self._last_due_id).order_by(schedules.c.id)
                ).all()
                conn.execute(
                    update(schedules).where(schedules.c.id == bindparam("b_id")).values(next_fire=bindparam("b_next")),
                    [{"b_id": sid, "b_next": t0 + offset(i)} for i, sid in enumerate(ids)],
                )
        if fresh_stats:
            self._analyze()
        self._notify()
        return Armed(t0=t0, db_now=db_now, mono=mono, woken_late_ms=max(0.0, _ms_since(mono, db_now, t0)))

    def finished_runs(self) -> int:
        """Runs that have ended (progress polling)."""
        with self.engine.connect() as conn:
            return int(
                conn.execute(select(func.count()).select_from(runs).where(runs.c.status != "running")).scalar_one()
            )

    def run_rows(self, since: datetime, until: datetime | None = None) -> list[MeasuredRun]:
        """History rows due at or after ``since`` (and before ``until``)."""
        query = select(runs.c.schedule_id, runs.c.scheduled_for, runs.c.started_at, runs.c.finished_at, runs.c.status)
        query = query.where(runs.c.scheduled_for >= since)
        if until is not None:
            query = query.where(runs.c.scheduled_for < until)
        with self.engine.connect() as conn:
            return [MeasuredRun(*row) for row in conn.execute(query)]

    def duplicates(self) -> int:
        """(schedule, scheduled-for) pairs with more than one run row: must be zero."""
        pairs = (
            select(runs.c.schedule_id, runs.c.scheduled_for)
            .group_by(runs.c.schedule_id, runs.c.scheduled_for)
            .having(func.count() > 1)
            .subquery()
        )
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(pairs)).scalar_one())

    def database_name(self) -> str | None:
        """The server database whose backends do this scratch's work (``None``: in-process SQLite)."""
        return None


class SQLiteScratch(Scratch):
    """A fresh SQLite file per cell in a temporary directory removed by :meth:`close`."""

    plugin = "sqlite"

    def __init__(self, directory: str | None = None) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="tickwork-bench-", dir=directory))
        self.path = self.directory / "none.db"

    def prepare(self, index: int) -> None:
        if self._engine is not None:
            self._engine.dispose()
        if self._store is not None:
            self._store.close()
        for old in self.directory.glob(f"{self.path.name}*"):
            old.unlink()
        self.path = self.directory / f"cell-{index}.db"
        self._store = registered_store(self.plugin, path=str(self.path), create=True)
        self._store.open()
        # Plain deferred transactions: progress polling must not take the write lock from the nodes.
        self._engine = sqlite_file_engine(self.path, busy_timeout=30.0, immediate=False)

    def store_options(self) -> dict[str, Any]:
        return {"path": str(self.path)}

    def describe(self) -> dict[str, Any]:
        import sqlite3

        return {"store": self.plugin, "sqlite_version": sqlite3.sqlite_version, "directory": str(self.directory)}

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        if self._store is not None:
            self._store.close()
            self._store = None
        shutil.rmtree(self.directory, ignore_errors=True)


def libpq_url(url: str, database: str | None = None) -> str:
    """A ``postgresql://`` URL psycopg accepts, optionally for another database."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise StoreError(f"--pg-url must be a postgresql:// URL, got {parsed.drivername}://...")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresScratch(Scratch):
    """A database created on the server of ``admin_url`` and dropped by :meth:`close`."""

    plugin = "postgres"

    def __init__(self, admin_url: str) -> None:
        super().__init__()
        import psycopg

        self.admin_url = libpq_url(admin_url)
        self.name = f"tickwork_bench_{os.getpid()}_{secrets.token_hex(4)}"
        self.url = libpq_url(admin_url, self.name)
        try:
            with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f'CREATE DATABASE "{self.name}"')
                self._settings = {
                    name: conn.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
                    for name in ("server_version", "fsync", "synchronous_commit", "shared_buffers", "autovacuum")
                }
        except psycopg.Error as exc:
            shown = masked(admin_url)
            raise StoreError(f"cannot create a scratch database through {shown} (--pg-url): {exc}") from exc
        self._created = True

    def prepare(self, index: int) -> None:
        if self._engine is None:
            self._store = registered_store(self.plugin, url=self.url, pool_size=2)
            self._store.upgrade()
            self._store.open()
            self._engine = pooled_engine(
                "postgresql+psycopg://" + self.url.split("://", 1)[1], pool_size=2, pre_ping=True
            )
        with self.engine.begin() as conn:
            # Every table that points at the schedules too: PostgreSQL refuses to truncate a table
            # a foreign key of an untruncated one references.
            conn.execute(text(f"TRUNCATE {', '.join(_TABLES)} RESTART IDENTITY"))

    def store_options(self) -> dict[str, Any]:
        return {"url": self.url}

    def database_name(self) -> str | None:
        return self.name

    def describe(self) -> dict[str, Any]:
        return {"store": self.plugin, "database": self.name, **self._settings}

    def exists(self) -> bool:
        """Whether the scratch database is still on the server."""
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5) as conn:
            return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.name,)).fetchone() is not None

    def close(self) -> None:
        import psycopg

        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        if self._store is not None:
            self._store.close()
            self._store = None
        if not self._created:
            return
        with (
            contextlib.suppress(psycopg.Error),
            psycopg.connect(self.admin_url, autocommit=True, connect_timeout=5) as conn,
        ):
            # WITH (FORCE): a node that failed to exit must not keep the database alive.
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            self._created = False


class MySQLScratch(Scratch):
    """A database created on the MySQL / MariaDB server of ``admin_url`` and dropped by
    :meth:`close`."""

    plugin = "mysql"

    def __init__(self, admin_url: str) -> None:
        super().__init__()
        try:
            import pymysql
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise ConfigError("MySQL cells need PyMySQL: pip install 'tickwork[bench]'") from exc
        parsed = make_url(admin_url)
        if parsed.get_backend_name() not in ("mysql", "mariadb"):
            raise StoreError(f"--mysql-url must be a mysql:// URL, got {parsed.drivername}://...")
        self.admin = parsed
        self.name = f"tickwork_bench_{os.getpid()}_{secrets.token_hex(4)}"
        self.url = parsed.set(drivername="mysql", database=self.name).render_as_string(hide_password=False)
        try:
            with contextlib.closing(self._connect()) as conn, conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE `{self.name}` CHARACTER SET utf8mb4")
                cur.execute("SELECT VERSION()")
                row = cur.fetchone()
                self._version = str(row[0]) if row else "?"
        except pymysql.Error as exc:
            shown = masked(parsed)
            raise StoreError(f"cannot create a scratch database through {shown} (--mysql-url): {exc}") from exc
        self._created = True

    def _connect(self) -> Any:
        import pymysql

        return pymysql.connect(
            host=self.admin.host or "127.0.0.1",
            port=self.admin.port or 3306,
            user=self.admin.username or "root",
            password=self.admin.password or "",
            connect_timeout=5,
            autocommit=True,
        )

    def prepare(self, index: int) -> None:
        if self._store is None:
            self._store = registered_store(self.plugin, url=self.url, pool_size=2)
            self._store.upgrade()
            self._store.open()
            self._engine = self._store.engine
        with self.engine.begin() as conn:
            # TRUNCATE (ids from 1 again) is refused on a table a foreign key points at, unless
            # the checks are off for this session.
            conn.execute(text("SET FOREIGN_KEY_CHECKS = 0"))
            for table in _TABLES:
                conn.execute(text(f"TRUNCATE TABLE {table}"))
            conn.execute(text("SET FOREIGN_KEY_CHECKS = 1"))

    def store_options(self) -> dict[str, Any]:
        return {"url": self.url}

    def describe(self) -> dict[str, Any]:
        return {"store": self.plugin, "database": self.name, "server_version": self._version}

    def close(self) -> None:
        self._engine = None
        if self._store is not None:
            self._store.close()
            self._store = None
        if not self._created:
            return
        with contextlib.suppress(Exception), contextlib.closing(self._connect()) as conn, conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{self.name}`")
            self._created = False
