"""PostgreSQL for the test suite, a pytest plugin (loaded by ``tests/conftest.py``).

``postgres_server`` (session)
    The :class:`PostgresServer` every PostgreSQL test of the session talks to.
``postgres_url`` (function)
    A SQLAlchemy URL (``postgresql+psycopg://user@host:port/dbname``) of a fresh, empty database
    made for one test and dropped after it, open connections included.
``postgres_migrated_url`` (function)
    The same for a database that already holds tickwork's schema at head.

The server is chosen as ``tests/support/servers/base.py`` says, with ``TICKWORK_TEST_PG``,
``TICKWORK_TEST_PG_URL`` and ``TICKWORK_TEST_PG_BINDIR``; the usual one is 127.0.0.1:5432 as
``postgres`` (trust auth). A throwaway cluster is made by ``initdb`` (trust auth, no sync) and run
by ``postgres`` with durability off, from ``TICKWORK_TEST_PG_BINDIR``, ``pg_config --bindir``,
Debian's ``/usr/lib/postgresql/<version>/bin`` (newest first) or ``PATH``.
"""

from __future__ import annotations

import contextlib
import graphlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from tests.support.servers.base import PROBE_TIMEOUT_S, Programs, Provider, Server
from tickwork.sql.migrations import VERSION_TABLE
from tickwork_postgres.store import PostgresStore

__all__ = ["POSTGRES", "PostgresServer", "postgres_migrated_url", "postgres_server", "postgres_url"]


@dataclass(frozen=True)
class PostgresServer(Server):
    """A PostgreSQL server; :meth:`conninfo` is what ``psycopg.connect`` takes."""

    def conninfo(self, dbname: str) -> str:
        """A libpq connection string for ``dbname``."""
        return make_conninfo(host=self.host, port=self.port, user=self.user, password=self.password, dbname=dbname)


class PostgresProvider(Provider[PostgresServer]):
    label = "PostgreSQL"
    env_prefix = "TICKWORK_TEST_PG"
    server_class = PostgresServer
    drivername = "postgresql+psycopg"
    backend = "postgresql"
    port = 5432
    superuser = "postgres"
    maintenance_dbname = "postgres"
    program_names = (("initdb",), ("postgres",))
    # Fast shutdown, then immediate shutdown, then no shutdown at all.
    stop_signals = (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL)
    start_timeout_s = 30.0

    def probe(self, server: PostgresServer) -> str | None:
        try:
            with psycopg.connect(server.conninfo(server.maintenance_dbname), connect_timeout=PROBE_TIMEOUT_S) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            return f"{type(exc).__name__}: {str(exc).strip()}"
        return None

    def program_dirs(self) -> list[Path]:
        dirs: list[Path] = []
        pg_config = shutil.which("pg_config")
        if pg_config:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True)
                dirs.append(Path(out.stdout.strip()))
        debian = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()]
        dirs += sorted(debian, key=lambda p: int(p.parent.name), reverse=True)
        return dirs + [Path(d) for d in os.environ.get("PATH", "").split(os.pathsep) if d]

    def init_argv(self, programs: Programs, data_dir: Path) -> list[str]:
        return [str(programs.init), "--pgdata", str(data_dir), "--username", self.superuser, "--auth", "trust",
                "--encoding", "UTF8", "--no-locale", "--no-sync"]  # fmt: skip

    def serve_argv(self, programs: Programs, data_dir: Path, base_dir: Path, port: int) -> list[str]:
        return [
            str(programs.serve), "-D", str(data_dir), "-p", str(port),
            "-c", "listen_addresses=127.0.0.1",
            # Its own socket directory: never the system server's.
            "-c", f"unix_socket_directories={base_dir}",
            # Durability is worthless for a cluster deleted at session end, and costs DDL-heavy tests time.
            "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
        ]  # fmt: skip

    def create_database(self, server: PostgresServer, dbname: str) -> None:
        with self._admin(server) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
            self._no_commit_wait(conn, dbname)

    @staticmethod
    def _no_commit_wait(conn: psycopg.Connection[tuple[object, ...]], dbname: str) -> None:
        # A test database is dropped within seconds: a commit waiting for its WAL to reach the disk
        # buys nothing, and the store suite commits tens of thousands of times. What other sessions
        # see is unchanged (as fsync=off on a throwaway server).
        conn.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = off").format(sql.Identifier(dbname)))

    def migrate(self, server: PostgresServer, dbname: str) -> None:
        store = PostgresStore(server.url(dbname))
        try:
            store.upgrade()
        finally:
            store.close()

    def clone_database(self, server: PostgresServer, template: str, dbname: str) -> None:
        with self._admin(server) as conn:
            # A copy needs the template to have no session: end any the migration's pool left open.
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (template,),
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(dbname), sql.Identifier(template))
            )
            self._no_commit_wait(conn, dbname)

    def schema_of(self, server: PostgresServer, dbname: str) -> tuple[object, ...]:
        with psycopg.connect(server.conninfo(dbname), autocommit=True, connect_timeout=10) as conn:
            columns = conn.execute(
                "SELECT table_schema, table_name, column_name, data_type, is_nullable, column_default"
                " FROM information_schema.columns WHERE table_schema NOT IN ('pg_catalog', 'information_schema')"
                " ORDER BY 1, 2, 3"
            ).fetchall()
            indexes = conn.execute(
                "SELECT schemaname, indexname, indexdef FROM pg_indexes"
                " WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
            ).fetchall()
            routines = conn.execute(
                "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
            ).fetchall()
            version = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(VERSION_TABLE))).fetchall()
        return (tuple(columns), tuple(indexes), tuple(routines), tuple(version))

    def empty_tables(self, server: PostgresServer, dbname: str, keep: str) -> None:
        with self._admin(server) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            )
        with psycopg.connect(server.conninfo(dbname), autocommit=True, connect_timeout=10) as conn:
            # A test's sessions were ended above; a lock one of them held is gone with it, so this
            # waits for nothing (a bound all the same, not to hang a worker on a surprise).
            conn.execute("SET lock_timeout = '5s'")
            # DELETE, children before the tables they reference, and the sequences a test moved
            # back to their start: TRUNCATE makes each table's files again (~12 ms a table, most of
            # a store contract test's time), DELETE of a few rows takes well under a millisecond.
            names = [
                (schema, name)
                for schema, name in conn.execute(
                    "SELECT schemaname, tablename FROM pg_tables"
                    " WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND tablename <> %s",
                    (keep,),
                ).fetchall()
            ]
            order = graphlib.TopologicalSorter({table: set() for table in names})
            for child_schema, child, parent_schema, parent in conn.execute(
                "SELECT cn.nspname, c.relname, pn.nspname, p.relname FROM pg_constraint k"
                " JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace cn ON cn.oid = c.relnamespace"
                " JOIN pg_class p ON p.oid = k.confrelid JOIN pg_namespace pn ON pn.oid = p.relnamespace"
                " WHERE k.contype = 'f' AND k.conrelid <> k.confrelid"
            ).fetchall():
                order.add((parent_schema, parent), (child_schema, child))
            with conn.transaction():
                for schema, name in order.static_order():
                    if (schema, name) in names:
                        conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(schema, name)))
            for schema, name in conn.execute(
                "SELECT schemaname, sequencename FROM pg_sequences WHERE last_value IS NOT NULL"
            ).fetchall():
                conn.execute(sql.SQL("ALTER SEQUENCE {} RESTART").format(sql.Identifier(schema, name)))

    def drop_database(self, server: PostgresServer, dbname: str) -> None:
        name = sql.Identifier(dbname)
        with self._admin(server) as conn:
            # No new connections, end the open ones (DROP then waits for them to exit), drop.
            conn.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(name))
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            )
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(name))

    def _admin(self, server: PostgresServer) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(server.conninfo(server.maintenance_dbname), autocommit=True, connect_timeout=10)


POSTGRES = PostgresProvider()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The PostgreSQL server of this test session (see ``tests/support/servers/base.py`` for which)."""
    with POSTGRES.session_server(os.environ) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """SQLAlchemy URL of a fresh empty database for this test, dropped afterwards."""
    with POSTGRES.fresh_database(postgres_server) as dbname:
        yield postgres_server.url(dbname)


@pytest.fixture
def postgres_migrated_url(postgres_server: PostgresServer) -> Iterator[str]:
    """SQLAlchemy URL of a fresh database holding tickwork's schema at head (a copy of the session's
    migrated template), dropped afterwards."""
    with POSTGRES.migrated_database(postgres_server) as dbname:
        yield postgres_server.url(dbname)
