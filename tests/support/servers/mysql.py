"""MySQL / MariaDB for the test suite, a pytest plugin (loaded by ``tests/conftest.py``).

``mysql_server`` (session)
    The :class:`MySQLServer` every MySQL test of the session talks to.
``mysql_url`` (function)
    A ``mysql://`` URL of a fresh, empty database made for one test and dropped after it, open
    connections included.
``mysql_migrated_url`` (function)
    The same for a database that already holds tickwork's schema at head.

The server is chosen as ``tests/support/servers/base.py`` says, with ``TICKWORK_TEST_MYSQL``,
``TICKWORK_TEST_MYSQL_URL`` and ``TICKWORK_TEST_MYSQL_BINDIR``; the usual one is 127.0.0.1:3306 as
``root`` without a password. A throwaway MariaDB is made by ``mariadb-install-db`` and run by
``mariadbd`` (or their ``mysql_install_db`` / ``mysqld`` names) from ``TICKWORK_TEST_MYSQL_BINDIR``
or ``PATH``, ``/usr/sbin``, ``/usr/bin``, without grant tables (anyone is root) or binary log.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pymysql
import pytest

from tests.support.servers.base import PROBE_TIMEOUT_S, Programs, Provider, Server
from tickwork.sql.migrations import VERSION_TABLE
from tickwork_mysql.store import MySQLStore

__all__ = ["MYSQL", "MySQLServer", "mysql_migrated_url", "mysql_server", "mysql_url"]


@dataclass(frozen=True)
class MySQLServer(Server):
    """A MySQL or MariaDB server; :meth:`connect` opens an autocommit PyMySQL connection."""

    def connect(self, dbname: str | None = None) -> pymysql.connections.Connection[pymysql.cursors.Cursor]:
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password or "",
            database=dbname,
            connect_timeout=PROBE_TIMEOUT_S,
            autocommit=True,
        )


class MySQLProvider(Provider[MySQLServer]):
    label = "MySQL"
    env_prefix = "TICKWORK_TEST_MYSQL"
    server_class = MySQLServer
    drivername = "mysql"
    backend = "mysql"
    port = 3306
    superuser = "root"
    maintenance_dbname = "mysql"
    program_names = (("mariadb-install-db", "mysql_install_db"), ("mariadbd", "mysqld"))
    # Normal shutdown, then none.
    stop_signals = (signal.SIGTERM, signal.SIGKILL)
    start_timeout_s = 60.0

    def probe(self, server: MySQLServer) -> str | None:
        try:
            server.connect().close()
        except pymysql.Error as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def program_dirs(self) -> list[Path]:
        return [Path(d) for d in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/sbin", "/usr/bin"] if d]

    def init_argv(self, programs: Programs, data_dir: Path) -> list[str]:
        return [str(programs.init), "--no-defaults", f"--datadir={data_dir}",
                "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"]  # fmt: skip

    def serve_argv(self, programs: Programs, data_dir: Path, base_dir: Path, port: int) -> list[str]:
        return [str(programs.serve), "--no-defaults", f"--datadir={data_dir}", f"--port={port}",
                "--bind-address=127.0.0.1", f"--socket={base_dir / 'mysqld.sock'}",
                f"--pid-file={base_dir / 'mysqld.pid'}", "--skip-grant-tables", "--skip-log-bin",
                # Durability is worthless for a server deleted at session end.
                "--innodb-flush-log-at-trx-commit=0", "--innodb-buffer-pool-size=64M"]  # fmt: skip

    def create_database(self, server: MySQLServer, dbname: str) -> None:
        with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{dbname}` CHARACTER SET utf8mb4")

    def migrate(self, server: MySQLServer, dbname: str) -> None:
        store = MySQLStore(server.url(dbname))
        try:
            store.upgrade()
        finally:
            store.close()

    def clone_database(self, server: MySQLServer, template: str, dbname: str) -> None:
        # MySQL has no CREATE DATABASE ... TEMPLATE: each table is made again from the template's own
        # DDL (SHOW CREATE TABLE keeps indexes, foreign keys and options; CREATE TABLE ... LIKE
        # drops foreign keys), then its rows are copied (the migrations' version row).
        self.create_database(server, dbname)
        with contextlib.closing(server.connect(dbname)) as conn, conn.cursor() as cur:
            cur.execute("SET SESSION foreign_key_checks = 0")
            for table, ddl in self._ddl(server, template):
                cur.execute(ddl)
                cur.execute(f"INSERT INTO `{table}` SELECT * FROM `{template}`.`{table}`")

    def _ddl(self, server: MySQLServer, template: str) -> list[tuple[str, str]]:
        cache: dict[str, list[tuple[str, str]]] = self.__dict__.setdefault("_ddl_cache", {})
        if template not in cache:
            with contextlib.closing(server.connect(template)) as conn, conn.cursor() as cur:
                cur.execute("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'")
                tables = [str(row[0]) for row in cur.fetchall()]
                ddl = []
                for table in tables:
                    cur.execute(f"SHOW CREATE TABLE `{table}`")
                    row = cur.fetchone()
                    assert row is not None
                    ddl.append((table, re.sub(r" AUTO_INCREMENT=\d+", "", str(row[1]))))
            cache[template] = ddl
        return cache[template]

    def drop_database(self, server: MySQLServer, dbname: str) -> None:
        with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
            # A connection left in a transaction would hold a metadata lock DROP waits on for a year.
            self._kill_sessions(cur, dbname)
            cur.execute(f"DROP DATABASE IF EXISTS `{dbname}`")

    @staticmethod
    def _kill_sessions(cur: pymysql.cursors.Cursor, dbname: str) -> None:
        cur.execute("SELECT id FROM information_schema.processlist WHERE db = %s AND id <> CONNECTION_ID()", (dbname,))
        for (thread,) in cur.fetchall():
            with contextlib.suppress(pymysql.Error):  # it may have ended meanwhile
                cur.execute(f"KILL {int(thread)}")

    def schema_of(self, server: MySQLServer, dbname: str) -> tuple[object, ...]:
        with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT table_name, column_name, column_type, is_nullable, column_default, extra"
                " FROM information_schema.columns WHERE table_schema = %s ORDER BY 1, 2",
                (dbname,),
            )
            columns = tuple(cur.fetchall())
            cur.execute(
                "SELECT table_name, index_name, seq_in_index, column_name, non_unique"
                " FROM information_schema.statistics WHERE table_schema = %s ORDER BY 1, 2, 3",
                (dbname,),
            )
            indexes = tuple(cur.fetchall())
            cur.execute(f"SELECT * FROM `{dbname}`.`{VERSION_TABLE}`")
            version = tuple(cur.fetchall())
        return (columns, indexes, version)

    def empty_tables(self, server: MySQLServer, dbname: str, keep: str) -> None:
        with contextlib.closing(server.connect(dbname)) as conn, conn.cursor() as cur:
            self._kill_sessions(cur, dbname)
            # DELETE and a reset counter: TRUNCATE makes each table again (a DDL statement each).
            # The counter only where a test moved it: each ALTER costs ~30 ms, eight were most
            # of a store contract test's time.
            cur.execute("SET SESSION foreign_key_checks = 0, lock_wait_timeout = 5, innodb_lock_wait_timeout = 5")
            cur.execute("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'")
            for table, _ in cur.fetchall():
                if table != keep:
                    cur.execute(f"DELETE FROM `{table}`")
            conn.commit()
            cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND auto_increment > 1",
                (dbname,),
            )
            for (table,) in cur.fetchall():
                cur.execute(f"ALTER TABLE `{table}` AUTO_INCREMENT = 1")


MYSQL = MySQLProvider()


@pytest.fixture(scope="session")
def mysql_server() -> Iterator[MySQLServer]:
    """The MySQL / MariaDB server of this test session (see ``tests/support/servers/base.py`` for which)."""
    with MYSQL.session_server(os.environ) as server:
        yield server


@pytest.fixture
def mysql_url(mysql_server: MySQLServer) -> Iterator[str]:
    """``mysql://`` URL of a fresh empty database for this test, dropped afterwards."""
    with MYSQL.fresh_database(mysql_server) as dbname:
        yield mysql_server.url(dbname)


@pytest.fixture
def mysql_migrated_url(mysql_server: MySQLServer) -> Iterator[str]:
    """``mysql://`` URL of a fresh database holding tickwork's schema at head (a copy of the
    session's migrated template), dropped afterwards."""
    with MYSQL.migrated_database(mysql_server) as dbname:
        yield mysql_server.url(dbname)
