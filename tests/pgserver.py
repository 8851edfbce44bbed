"""PostgreSQL servers for the test suite, as a pytest plugin.

Load it from ``tests/conftest.py`` with ``pytest_plugins = ["tests.pgserver"]``. It provides two fixtures:

``postgres_server`` (session)
    A :class:`PostgresServer` describing the server every Postgres test of the session talks to.
``postgres_url`` (function)
    A SQLAlchemy URL (``postgresql+psycopg://user@host:port/dbname``) of a fresh, empty database made for one
    test and dropped after it, open connections included.

Which server is used
--------------------
``TICKWORK_TEST_PG`` chooses the mode; ``auto`` is the default:

``auto``
    ``TICKWORK_TEST_PG_URL`` if set (taken as given; its database part names the maintenance database used to
    create and drop test databases, ``postgres`` when absent); otherwise the server on 127.0.0.1:5432 as user
    ``postgres`` if it accepts a connection (CI runs one there with trust auth); otherwise a throwaway server
    started for the session.
``existing``
    As ``auto``, but never starts a server: failing to reach one fails the tests.
``throwaway``
    Always start a throwaway server, even when one is running on 5432.

Nothing is skipped: when no server is reachable and none can be started, every test that asks for one errors
with a message naming what was tried and why it failed.

The throwaway server
--------------------
``initdb`` and ``postgres`` are looked up in ``TICKWORK_TEST_PG_BINDIR``, then ``pg_config --bindir``, then
Debian's ``/usr/lib/postgresql/<version>/bin`` (newest first), then ``PATH``. The cluster lives in a fresh
``tickwork-pg-*`` directory under the temp dir (trust auth, superuser ``postgres``, fsync off) and listens on
127.0.0.1 on a free port, with its unix socket in that directory so it never touches the system server's socket
directory. ``postgres`` is the session's own child process: it is stopped (fast shutdown) and its directory
removed at the end of the session, and it gets SIGINT from the kernel if pytest dies without cleaning up.
Directories left by sessions that died are removed by the next throwaway start.

PostgreSQL refuses to run as root. When the tests run as root, ``initdb`` and ``postgres`` run as the system
user ``tickwork-pg`` (created with ``useradd --system`` when missing, falling back to ``nobody``), which owns the
temp directory; the switch is done by ``subprocess`` itself (setgroups/setgid/setuid), so no ``runuser`` or
``sudo`` is needed.

Several sessions may share one server at once: database names carry the process id, a random per-session token
and a counter (``tickwork_test_<pid>_<token>_<n>``), and each throwaway server has its own port and directory.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from pytest_postgresql.janitor import DatabaseJanitor
from sqlalchemy.engine import URL, make_url

ENV_MODE = "TICKWORK_TEST_PG"
ENV_URL = "TICKWORK_TEST_PG_URL"
ENV_BINDIR = "TICKWORK_TEST_PG_BINDIR"
MODES = ("auto", "existing", "throwaway")

RUNNING_HOST = "127.0.0.1"
RUNNING_PORT = 5432
SUPERUSER = "postgres"
MAINTENANCE_DB = "postgres"
SERVICE_USER = "tickwork-pg"
FALLBACK_SERVICE_USER = "nobody"
DIR_PREFIX = "tickwork-pg-"
OWNER_FILE = "owner.pid"

# How long a throwaway server may take to accept connections, and to shut down, before it counts as broken.
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
# A free port found by binding to port 0 can be taken by another process before postgres binds it.
PORT_ATTEMPTS = 3
PROBE_TIMEOUT_S = 3
JANITOR_TIMEOUT_S = 10

_PR_SET_PDEATHSIG = 1


class PostgresUnavailable(Exception):
    """No PostgreSQL server could be reached or started; the message says what was tried."""


@dataclass(frozen=True)
class PostgresServer:
    """Where a PostgreSQL server listens and how to log in to it.

    ``source`` tells how it was found: ``"url"`` (``TICKWORK_TEST_PG_URL``), ``"running"`` (127.0.0.1:5432) or
    ``"throwaway"`` (started for this session; ``throwaway`` then holds the process and its directory).
    """

    host: str
    port: int
    user: str
    password: str | None
    maintenance_dbname: str
    source: str
    throwaway: ThrowawayServer | None = None

    def url(self, dbname: str, drivername: str = "postgresql+psycopg") -> str:
        """Return a SQLAlchemy URL string for ``dbname`` on this server, password included."""
        return URL.create(
            drivername, username=self.user, password=self.password, host=self.host, port=self.port, database=dbname
        ).render_as_string(hide_password=False)

    def conninfo(self, dbname: str) -> str:
        """Return a libpq connection string for ``dbname``, as ``psycopg.connect`` takes it."""
        return make_conninfo(host=self.host, port=self.port, user=self.user, password=self.password, dbname=dbname)

    def describe(self) -> str:
        """Return a human-readable location with the password masked, for error messages."""
        return URL.create(
            "postgresql",
            username=self.user,
            password=self.password,
            host=self.host,
            port=self.port,
            database=self.maintenance_dbname,
        ).render_as_string(hide_password=True)


def server_from_url(url: str) -> PostgresServer:
    """Build a :class:`PostgresServer` from a ``postgresql[+driver]://`` URL; its database is the maintenance one."""
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise PostgresUnavailable(f"{ENV_URL} is not a valid database URL: {exc}") from exc
    if parsed.get_backend_name() != "postgresql":
        raise PostgresUnavailable(f"{ENV_URL} must be a postgresql:// URL, got backend {parsed.get_backend_name()!r}")
    return PostgresServer(
        host=parsed.host or RUNNING_HOST,
        port=parsed.port or RUNNING_PORT,
        user=parsed.username or SUPERUSER,
        password=parsed.password,
        maintenance_dbname=parsed.database or MAINTENANCE_DB,
        source="url",
    )


def probe(server: PostgresServer) -> str | None:
    """Return None if ``server`` accepts a connection to its maintenance database, else the reason it did not."""
    try:
        with psycopg.connect(server.conninfo(server.maintenance_dbname), connect_timeout=PROBE_TIMEOUT_S) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"{type(exc).__name__}: {str(exc).strip()}"
    return None


def find_bindir(env: Mapping[str, str]) -> Path:
    """Return the directory holding ``initdb`` and ``postgres``, or raise naming every place looked at."""
    override = env.get(ENV_BINDIR)
    if override:
        if _has_server_binaries(Path(override)):
            return Path(override)
        raise PostgresUnavailable(f"{ENV_BINDIR}={override} does not contain both initdb and postgres")
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True)
            candidates.append(Path(out.stdout.strip()))
    debian = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()]
    candidates += sorted(debian, key=lambda p: int(p.parent.name), reverse=True)
    for name in ("initdb", "postgres"):
        found = shutil.which(name)
        if found:
            candidates.append(Path(found).parent)
    for candidate in candidates:
        if _has_server_binaries(candidate):
            return candidate
    looked = ", ".join(str(c) for c in candidates) or "nowhere (no pg_config, /usr/lib/postgresql/*/bin or PATH hit)"
    raise PostgresUnavailable(
        f"PostgreSQL server binaries (initdb, postgres) not found; looked in: {looked}. "
        f"Install the server (Debian: apt-get install postgresql) or set {ENV_BINDIR}."
    )


def _has_server_binaries(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in ("initdb", "postgres"))


@dataclass(frozen=True)
class Account:
    """The unprivileged system user a throwaway server runs as when the tests run as root."""

    name: str
    uid: int
    gid: int


def service_account() -> Account | None:
    """Return the account to run PostgreSQL as, or None to run it as the current (non-root) user."""
    if os.geteuid() != 0:
        return None
    failures: list[str] = []
    try:
        entry = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        failures.append(_create_service_user())
        try:
            entry = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            try:
                entry = pwd.getpwnam(FALLBACK_SERVICE_USER)
            except KeyError as exc:
                raise PostgresUnavailable(
                    f"running as root, PostgreSQL needs an unprivileged user, but neither {SERVICE_USER!r} "
                    f"nor {FALLBACK_SERVICE_USER!r} exists and creating the first failed: {'; '.join(failures)}"
                ) from exc
    return Account(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid)


def _create_service_user() -> str:
    """Run ``useradd`` for the service user; return what went wrong, or an empty string.

    Two sessions may race here; the loser's useradd fails with "already exists", which the caller's second
    lookup absorbs.
    """
    useradd = shutil.which("useradd") or ("/usr/sbin/useradd" if os.access("/usr/sbin/useradd", os.X_OK) else None)
    if useradd is None:
        return "useradd not found"
    result = subprocess.run(
        [
            useradd,
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            "--comment",
            "tickwork throwaway test PostgreSQL",
            SERVICE_USER,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return "" if result.returncode == 0 else f"useradd exited {result.returncode}: {result.stderr.strip()}"


def free_port(host: str = RUNNING_HOST) -> int:
    """Return a TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """Ask the kernel to send SIGINT (fast shutdown) to postgres if the pytest process dies first.

    Runs in the child between fork and exec, after the uid switch, which would otherwise clear it.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_pid(path: Path) -> int | None:
    try:
        first = path.read_text().split("\n", 1)[0].strip()
    except OSError:
        return None
    return int(first) if first.isdigit() else None


def remove_stale_dirs(tmp_root: Path) -> list[Path]:
    """Remove throwaway directories whose pytest process and postmaster are both gone; return those removed."""
    removed = []
    for candidate in tmp_root.glob(f"{DIR_PREFIX}*"):
        owner = _read_pid(candidate / OWNER_FILE)
        if owner is None or _pid_alive(owner):
            continue
        postmaster = _read_pid(candidate / "data" / "postmaster.pid")
        if postmaster is not None and _pid_alive(postmaster):
            continue
        shutil.rmtree(candidate, ignore_errors=True)
        removed.append(candidate)
    return removed


class ThrowawayServer:
    """A PostgreSQL cluster created in a temp directory, run as a child process, and deleted when stopped."""

    def __init__(self, bindir: Path, account: Account | None, tmp_root: Path | None = None) -> None:
        """Prepare (but do not start) a server using ``bindir``'s binaries, run as ``account`` if given."""
        self.bindir = bindir
        self.account = account
        self.tmp_root = tmp_root or Path(tempfile.gettempdir())
        self.base_dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.startup_seconds: float | None = None

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory (inside the temp directory)."""
        assert self.base_dir is not None, "server not started"
        return self.base_dir / "data"

    @property
    def pid(self) -> int | None:
        """The postmaster's process id while it runs."""
        return self.process.pid if self.process is not None else None

    def start(self) -> PostgresServer:
        """Create the cluster, start postgres, wait until it accepts connections; stop and clean up on failure."""
        began = time.monotonic()
        remove_stale_dirs(self.tmp_root)
        self.base_dir = Path(tempfile.mkdtemp(prefix=DIR_PREFIX, dir=self.tmp_root))
        atexit.register(self.stop)
        try:
            (self.base_dir / OWNER_FILE).write_text(f"{os.getpid()}\n")
            if self.account is not None:
                os.chown(self.base_dir, self.account.uid, self.account.gid)
            self._initdb()
            self._start_postgres()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        assert self.port is not None
        return PostgresServer(
            host=RUNNING_HOST,
            port=self.port,
            user=SUPERUSER,
            password=None,
            maintenance_dbname=MAINTENANCE_DB,
            source="throwaway",
            throwaway=self,
        )

    def stop(self) -> None:
        """Shut postgres down and delete the directory; safe to call more than once."""
        self._stop_process()
        base_dir, self.base_dir = self.base_dir, None
        if base_dir is not None:
            shutil.rmtree(base_dir, ignore_errors=True)
        atexit.unregister(self.stop)

    def restart(self, down_seconds: float = 0.0) -> None:
        """Stop postgres (fast shutdown), stay down ``down_seconds``, start it again on the same port."""
        assert self.port is not None, "server not started"
        port = self.port
        self._stop_process()
        time.sleep(down_seconds)
        self._start_postgres(port)

    def _stop_process(self) -> None:
        """Fast shutdown, escalating to immediate shutdown and then SIGKILL if postgres hangs."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
            process.send_signal(sig)
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
                return
            except subprocess.TimeoutExpired:
                continue

    def _run_as(self) -> str:
        return self.account.name if self.account is not None else pwd.getpwuid(os.geteuid()).pw_name

    def _popen(self, argv: list[str], stdout: IO[bytes] | int, *, die_with_parent: bool) -> subprocess.Popen[bytes]:
        """Start ``argv`` in the temp directory as the service account (if any), stderr merged into stdout."""
        assert self.base_dir is not None
        account = self.account
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
        if account is not None:
            env.update(HOME=str(self.base_dir), USER=account.name, LOGNAME=account.name)
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            cwd=self.base_dir,
            env=env,
            user=account.uid if account is not None else None,
            group=account.gid if account is not None else None,
            extra_groups=[] if account is not None else None,
            # Own session: a Ctrl-C in the terminal reaches pytest only, which then stops postgres in order.
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent and sys.platform == "linux" else None,
        )

    def _initdb(self) -> None:
        argv = [
            str(self.bindir / "initdb"),
            "--pgdata",
            str(self.data_dir),
            "--username",
            SUPERUSER,
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            "--no-locale",
            "--no-sync",
        ]
        process = self._popen(argv, subprocess.PIPE, die_with_parent=False)
        try:
            output, _ = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        if process.returncode != 0:
            text = output.decode(errors="replace").strip()
            raise PostgresUnavailable(f"initdb (as user {self._run_as()!r}) exited {process.returncode}: {text}")

    def _start_postgres(self, fixed_port: int | None = None) -> None:
        assert self.base_dir is not None
        failures: list[str] = []
        for attempt in range(1, PORT_ATTEMPTS + 1):
            port = fixed_port or free_port()
            log_path = self.base_dir / f"postgres-{attempt}.log"
            argv = [
                str(self.bindir / "postgres"), "-D", str(self.data_dir), "-p", str(port),
                "-c", f"listen_addresses={RUNNING_HOST}",
                "-c", f"unix_socket_directories={self.base_dir}",
                # Durability is worthless for a cluster deleted at session end, and costs DDL-heavy tests time.
                "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            ]  # fmt: skip
            with log_path.open("wb") as log:
                self.process = self._popen(argv, log, die_with_parent=True)
            failure = self._wait_ready(self.process, port, log_path)
            if failure is None:
                self.port = port
                return
            failures.append(f"port {port}: {failure}")
            self._stop_process()
            if fixed_port or ("could not bind" not in failure and "already in use" not in failure):
                break
        raise PostgresUnavailable(
            f"throwaway postgres ({self.bindir / 'postgres'}, as user {self._run_as()!r}) did not start: "
            + " | ".join(failures)
        )

    def _wait_ready(self, process: subprocess.Popen[bytes], port: int, log_path: Path) -> str | None:
        """Return None once postgres accepts a connection, else why it never did (with the log's tail)."""
        conninfo = make_conninfo(host=RUNNING_HOST, port=port, user=SUPERUSER, dbname=MAINTENANCE_DB)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            code = process.poll()
            if code is not None:
                return f"postgres exited {code}: {_tail(log_path)}"
            try:
                with psycopg.connect(conninfo, connect_timeout=2):
                    return None
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    return f"not accepting connections after {START_TIMEOUT_S:.0f}s ({exc}): {_tail(log_path)}"
            time.sleep(0.05)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return " / ".join(text.strip().splitlines()[-lines:])


def select_server(env: Mapping[str, str]) -> PostgresServer:
    """Find or start the session's server following the rules in this module's docstring."""
    mode = env.get(ENV_MODE, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise PostgresUnavailable(f"{ENV_MODE}={env[ENV_MODE]!r} is not one of {', '.join(MODES)}")
    if mode == "throwaway":
        return start_throwaway(env)
    url = env.get(ENV_URL)
    if url:
        server = server_from_url(url)
        problem = probe(server)
        if problem is not None:
            raise PostgresUnavailable(f"{ENV_URL} points at {server.describe()}, which refused: {problem}")
        return server
    running = PostgresServer(
        host=RUNNING_HOST,
        port=RUNNING_PORT,
        user=SUPERUSER,
        password=None,
        maintenance_dbname=MAINTENANCE_DB,
        source="running",
    )
    problem = probe(running)
    if problem is None:
        return running
    if mode == "existing":
        raise PostgresUnavailable(f"{ENV_MODE}=existing but {running.describe()} refused: {problem}")
    try:
        return start_throwaway(env)
    except PostgresUnavailable as exc:
        raise PostgresUnavailable(
            f"no server on {running.describe()} ({problem}), and starting a throwaway one failed: {exc}"
        ) from exc


def start_throwaway(env: Mapping[str, str]) -> PostgresServer:
    """Start a throwaway server for this process; the caller must call ``server.throwaway.stop()``."""
    return ThrowawayServer(find_bindir(env), service_account()).start()


_SESSION_TOKEN = secrets.token_hex(3)
_db_counter = itertools.count(1)


def new_database_name() -> str:
    """Return a database name unique across processes, sessions and calls: ``tickwork_test_<pid>_<token>_<n>``."""
    return f"tickwork_test_{os.getpid()}_{_SESSION_TOKEN}_{next(_db_counter)}"


@contextlib.contextmanager
def fresh_database(server: PostgresServer) -> Iterator[str]:
    """Create an empty database on ``server``, yield its name, then drop it (terminating open connections)."""
    dbname = new_database_name()
    janitor = DatabaseJanitor(
        user=server.user,
        password=server.password,
        host=server.host,
        port=server.port,
        dbname=dbname,
        maintenance_dbname=server.maintenance_dbname,
        connection_timeout=JANITOR_TIMEOUT_S,
    )
    janitor.init()
    try:
        yield dbname
    finally:
        janitor.drop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The PostgreSQL server of this test session (see the module docstring for how it is chosen)."""
    try:
        server = select_server(os.environ)
    except PostgresUnavailable as exc:
        pytest.fail(f"PostgreSQL tests need a server: {exc}", pytrace=False)
    try:
        yield server
    finally:
        if server.throwaway is not None:
            server.throwaway.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """SQLAlchemy URL of a fresh empty database for this test, dropped afterwards."""
    with fresh_database(postgres_server) as dbname:
        yield postgres_server.url(dbname)
