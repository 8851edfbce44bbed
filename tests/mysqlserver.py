"""MySQL / MariaDB servers for the test suite, as a pytest plugin (the twin of tests/pgserver.py).

Load it from ``tests/conftest.py`` with ``pytest_plugins``. Fixtures:

``mysql_server`` (session)
    The :class:`MySQLServer` every MySQL test of the session talks to.
``mysql_url`` (function)
    A ``mysql://`` URL of a fresh, empty database made for one test and dropped after it.

Which server is used: ``TICKWORK_TEST_MYSQL`` is ``auto`` (default), ``existing`` or ``throwaway``,
as ``TICKWORK_TEST_PG`` in tests/pgserver.py. ``auto`` takes ``TICKWORK_TEST_MYSQL_URL`` if set,
else the server on 127.0.0.1:3306 as ``root`` without a password if it answers, else starts a
throwaway MariaDB (``mariadb-install-db`` + ``mariadbd`` from ``TICKWORK_TEST_MYSQL_BINDIR`` or
``PATH``/``/usr/sbin``) on a free port in a fresh temp directory, as the unprivileged user of
tests/pgserver.py when the tests run as root, stopped and removed at session end. Nothing is
skipped: when no server can be had, every test that asks for one fails naming what was tried.

Database names are ``tickwork_test_<pid>_<token>_<n>``, so sessions sharing a server never collide.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pymysql
import pytest
from sqlalchemy.engine import make_url

from tests.pgserver import Account, _die_with_parent, _tail, free_port, service_account

ENV_MODE = "TICKWORK_TEST_MYSQL"
ENV_URL = "TICKWORK_TEST_MYSQL_URL"
ENV_BINDIR = "TICKWORK_TEST_MYSQL_BINDIR"
MODES = ("auto", "existing", "throwaway")
RUNNING_HOST = "127.0.0.1"
RUNNING_PORT = 3306
DIR_PREFIX = "tickwork-mysql-"
START_TIMEOUT_S = 60.0


class MySQLUnavailable(Exception):
    """No MySQL / MariaDB server could be reached or started; the message says what was tried."""


@dataclass(frozen=True)
class MySQLServer:
    host: str
    port: int
    user: str
    password: str | None
    source: str
    throwaway: ThrowawayMariaDB | None = None

    def url(self, dbname: str) -> str:
        auth = self.user if not self.password else f"{self.user}:{self.password}"
        return f"mysql://{auth}@{self.host}:{self.port}/{dbname}"

    def connect(self, dbname: str | None = None) -> pymysql.connections.Connection[pymysql.cursors.Cursor]:
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password or "",
            database=dbname,
            connect_timeout=3,
            autocommit=True,
        )

    def describe(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


def probe(server: MySQLServer) -> str | None:
    """None if ``server`` accepts a connection, else why not."""
    try:
        server.connect().close()
    except pymysql.Error as exc:
        return str(exc)
    return None


def find_binaries(env: Mapping[str, str]) -> tuple[Path, Path]:
    """``mariadb-install-db`` (or ``mysql_install_db``) and ``mariadbd`` (or ``mysqld``)."""
    dirs = [env[ENV_BINDIR]] if env.get(ENV_BINDIR) else []
    dirs += [*os.environ.get("PATH", "").split(os.pathsep), "/usr/sbin", "/usr/bin"]
    found: dict[str, Path] = {}
    for role, names in (("install", ("mariadb-install-db", "mysql_install_db")), ("server", ("mariadbd", "mysqld"))):
        for directory in dirs:
            hits = [Path(directory) / n for n in names if (Path(directory) / n).is_file()]
            if hits:
                found[role] = hits[0]
                break
    if len(found) < 2:
        raise MySQLUnavailable(f"mariadb-install-db and mariadbd not found in {ENV_BINDIR}, PATH, /usr/sbin")
    return found["install"], found["server"]


class ThrowawayMariaDB:
    """A MariaDB server in a temp directory, owned by this process."""

    def __init__(self, install: Path, server: Path, account: Account | None) -> None:
        self.install, self.server, self.account = install, server, account
        self.base_dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    def _popen(self, argv: list[str], stdout: int | object, *, die_with_parent: bool) -> subprocess.Popen[bytes]:
        account = self.account
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=stdout,  # type: ignore[arg-type]
            stderr=subprocess.STDOUT,
            cwd=self.base_dir,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(self.base_dir)},
            user=account.uid if account is not None else None,
            group=account.gid if account is not None else None,
            extra_groups=[] if account is not None else None,
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent and sys.platform == "linux" else None,
        )

    def start(self) -> MySQLServer:
        self.base_dir = Path(tempfile.mkdtemp(prefix=DIR_PREFIX))
        atexit.register(self.stop)
        try:
            if self.account is not None:
                os.chown(self.base_dir, self.account.uid, self.account.gid)
            data = self.base_dir / "data"
            init = self._popen(
                [str(self.install), "--no-defaults", f"--datadir={data}", "--auth-root-authentication-method=normal",
                 "--skip-test-db", "--skip-name-resolve"],
                subprocess.PIPE,
                die_with_parent=False,
            )  # fmt: skip
            output, _ = init.communicate(timeout=180)
            if init.returncode != 0:
                raise MySQLUnavailable(f"{self.install} exited {init.returncode}: {output.decode(errors='replace')}")
            self.port = free_port()
            log_path = self.base_dir / "mariadbd.log"
            with log_path.open("wb") as log:
                self.process = self._popen(
                    [str(self.server), "--no-defaults", f"--datadir={data}", f"--port={self.port}",
                     f"--bind-address={RUNNING_HOST}", f"--socket={self.base_dir / 'mysqld.sock'}",
                     f"--pid-file={self.base_dir / 'mysqld.pid'}", "--skip-grant-tables", "--skip-log-bin",
                     "--innodb-flush-log-at-trx-commit=0", "--innodb-buffer-pool-size=64M"],
                    log,
                    die_with_parent=True,
                )  # fmt: skip
            server = MySQLServer(RUNNING_HOST, self.port, "root", None, "throwaway", self)
            deadline = time.monotonic() + START_TIMEOUT_S
            while (problem := probe(server)) is not None:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise MySQLUnavailable(f"throwaway mariadbd did not start ({problem}): {_tail(log_path)}")
                time.sleep(0.1)
            return server
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server and delete its directory; safe to call more than once."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        base_dir, self.base_dir = self.base_dir, None
        if base_dir is not None:
            shutil.rmtree(base_dir, ignore_errors=True)
        atexit.unregister(self.stop)


def start_throwaway(env: Mapping[str, str]) -> MySQLServer:
    try:
        account = service_account()
    except Exception as exc:
        raise MySQLUnavailable(str(exc)) from exc
    return ThrowawayMariaDB(*find_binaries(env), account).start()


def select_server(env: Mapping[str, str]) -> MySQLServer:
    """Find or start the session's server following the module docstring."""
    mode = env.get(ENV_MODE, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise MySQLUnavailable(f"{ENV_MODE}={env[ENV_MODE]!r} is not one of {', '.join(MODES)}")
    if mode == "throwaway":
        return start_throwaway(env)
    if env.get(ENV_URL):
        parsed = make_url(env[ENV_URL])
        server = MySQLServer(
            parsed.host or RUNNING_HOST, parsed.port or RUNNING_PORT, parsed.username or "root", parsed.password, "url"
        )
        problem = probe(server)
        if problem is not None:
            raise MySQLUnavailable(f"{ENV_URL} points at {server.describe()}, which refused: {problem}")
        return server
    running = MySQLServer(RUNNING_HOST, RUNNING_PORT, "root", None, "running")
    problem = probe(running)
    if problem is None:
        return running
    if mode == "existing":
        raise MySQLUnavailable(f"{ENV_MODE}=existing but {running.describe()} refused: {problem}")
    try:
        return start_throwaway(env)
    except MySQLUnavailable as exc:
        raise MySQLUnavailable(f"no server on {running.describe()} ({problem}), and no throwaway one: {exc}") from exc


_SESSION_TOKEN = secrets.token_hex(3)
_db_counter = itertools.count(1)


def new_database_name() -> str:
    return f"tickwork_test_{os.getpid()}_{_SESSION_TOKEN}_{next(_db_counter)}"


@contextlib.contextmanager
def fresh_database(server: MySQLServer) -> Iterator[str]:
    """Create an empty database, yield its name, drop it afterwards."""
    dbname = new_database_name()
    with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{dbname}` CHARACTER SET utf8mb4")
    try:
        yield dbname
    finally:
        with contextlib.closing(server.connect()) as conn, conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{dbname}`")


@pytest.fixture(scope="session")
def mysql_server() -> Iterator[MySQLServer]:
    try:
        server = select_server(os.environ)
    except MySQLUnavailable as exc:
        pytest.fail(f"MySQL tests need a server: {exc}", pytrace=False)
    try:
        yield server
    finally:
        if server.throwaway is not None:
            server.throwaway.stop()


@pytest.fixture
def mysql_url(mysql_server: MySQLServer) -> Iterator[str]:
    """``mysql://`` URL of a fresh empty database for this test, dropped afterwards."""
    with fresh_database(mysql_server) as dbname:
        yield mysql_server.url(dbname)
