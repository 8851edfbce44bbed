"""What every test database server shares; ``postgres.py`` and ``mysql.py`` add only what differs.

Which server is used
--------------------
Each provider reads ``<PREFIX>`` (``TICKWORK_TEST_PG``, ``TICKWORK_TEST_MYSQL``), ``auto`` by default:

``auto``
    ``<PREFIX>_URL`` if set (taken as given; its database part names the maintenance database used
    to create and drop test databases); otherwise the server on 127.0.0.1 at the database's usual
    port as its superuser without a password, if it answers (CI runs them there); otherwise a
    throwaway server started for the session.
``existing``
    As ``auto``, but never starts a server: failing to reach one fails the tests.
``throwaway``
    Always start a throwaway server, even when one is running.

Nothing is skipped: when no server can be reached or started, every test that asks for one errors
with a message naming what was tried and why it failed.

The throwaway server
--------------------
The provider names its two programs (one creates a data directory, one serves it), found in
``<PREFIX>_BINDIR`` when set, else in the places the Debian packages put them. The server lives in
a fresh directory under the temp dir, listens on 127.0.0.1 on a free port with its unix socket in
that directory, and is this process's child: it is stopped and its directory removed at the end of
the session (or at exit), and the kernel signals it if pytest dies without cleaning up. Directories
left by sessions that died are removed by the next throwaway start.

Neither server runs as root. When the tests run as root, both programs run as the system user
``tickwork-db`` (created with ``useradd --system`` when missing, else ``nobody``), which owns the
directory; ``subprocess`` switches user itself, so no ``runuser`` or ``sudo`` is needed.

Why not pytest-postgresql / pytest-mysql
----------------------------------------
Their process factories always start a server (the probe-then-start rule above would still be
ours), start it through ``pg_ctl`` / ``mysqld_safe`` command strings that cannot run PostgreSQL as
another user when we are root, need mirakuru and port-for, and do not tie the server's life to
ours. Taking only their janitor is all the old code did; this module's is a few lines, and one
base for both databases is smaller than two plugins plus the wrappers they would need.

Several sessions may share one server: database names carry the process id, a random per-session
token and a counter (``tickwork_test_<pid>_<token>_<n>``), and each throwaway server has its own
port and directory.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
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
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar, Generic, NamedTuple, TypeVar

import pytest
from sqlalchemy.engine import URL, make_url

from tickwork.sql.migrations import VERSION_TABLE

MODES = ("auto", "existing", "throwaway")
LOCALHOST = "127.0.0.1"
SERVICE_USER = "tickwork-db"
FALLBACK_SERVICE_USER = "nobody"
OWNER_FILE = "owner.pid"
SERVER_PID_FILE = "server.pid"

STOP_TIMEOUT_S = 15.0
INIT_TIMEOUT_S = 180.0
# A free port found by binding to port 0 can be taken by another process before the server binds it.
PORT_ATTEMPTS = 3
PROBE_TIMEOUT_S = 3
# How the servers' logs say the port was taken (PostgreSQL: "could not bind", MariaDB: "already in use").
BIND_FAILURES = ("could not bind", "already in use")

_PR_SET_PDEATHSIG = 1


class ServerUnavailable(Exception):
    """No server could be reached or started; the message says what was tried."""


@dataclass(frozen=True)
class Server:
    """Where a database server listens and how to log in to it.

    ``source`` tells how it was found: ``"url"`` (``<PREFIX>_URL``), ``"running"`` (the usual port on
    127.0.0.1) or ``"throwaway"`` (started for this session; ``throwaway`` then holds its process).
    """

    drivername: str
    host: str
    port: int
    user: str
    password: str | None
    maintenance_dbname: str
    source: str
    throwaway: ThrowawayServer | None = field(default=None, compare=False)

    def url(self, dbname: str) -> str:
        """A SQLAlchemy URL string for ``dbname`` on this server, password included."""
        return self._url(dbname).render_as_string(hide_password=False)

    def describe(self) -> str:
        """Where the server is, password masked, for messages."""
        return self._url(self.maintenance_dbname).render_as_string(hide_password=True)

    def _url(self, dbname: str) -> URL:
        return URL.create(
            self.drivername, username=self.user, password=self.password, host=self.host, port=self.port, database=dbname
        )


S = TypeVar("S", bound=Server)


class Programs(NamedTuple):
    """The throwaway server's two programs: ``init`` creates a data directory, ``serve`` serves it."""

    init: Path
    serve: Path


@dataclass(frozen=True)
class Account:
    """The unprivileged system user a throwaway server runs as when the tests run as root."""

    name: str
    uid: int
    gid: int


class Provider(ABC, Generic[S]):
    """One database's servers: how to reach one, how to start one, how to make and drop databases."""

    label: ClassVar[str]
    env_prefix: ClassVar[str]
    server_class: type[S]
    drivername: ClassVar[str]
    backend: ClassVar[str]
    port: ClassVar[int]
    superuser: ClassVar[str]
    maintenance_dbname: ClassVar[str]
    #: The names the init and the serve program go by.
    program_names: ClassVar[tuple[Sequence[str], Sequence[str]]]
    #: Sent in turn to stop the server, each after the last had ``STOP_TIMEOUT_S``; the first also
    #: reaches it from the kernel when pytest dies.
    stop_signals: ClassVar[Sequence[signal.Signals]]
    start_timeout_s: ClassVar[float]

    @property
    def env_mode(self) -> str:
        return self.env_prefix

    @property
    def env_url(self) -> str:
        return f"{self.env_prefix}_URL"

    @property
    def env_bindir(self) -> str:
        return f"{self.env_prefix}_BINDIR"

    # -- what differs per database ----------------------------------------------------------------

    @abstractmethod
    def probe(self, server: S) -> str | None:
        """None if ``server`` accepts a connection to its maintenance database, else why not."""

    @abstractmethod
    def program_dirs(self) -> list[Path]:
        """Where the Debian packages (and ``PATH``) put the programs, most wanted first."""

    @abstractmethod
    def init_argv(self, programs: Programs, data_dir: Path) -> list[str]:
        """The command creating an empty data directory with a password-less superuser."""

    @abstractmethod
    def serve_argv(self, programs: Programs, data_dir: Path, base_dir: Path, port: int) -> list[str]:
        """The command serving ``data_dir`` on 127.0.0.1:``port``, its socket in ``base_dir``."""

    @abstractmethod
    def create_database(self, server: S, dbname: str) -> None: ...

    @abstractmethod
    def drop_database(self, server: S, dbname: str) -> None:
        """Drop ``dbname``, ending the connections still open to it."""

    @abstractmethod
    def migrate(self, server: S, dbname: str) -> None:
        """Create tickwork's schema in the empty database ``dbname`` (its store's ``upgrade``)."""

    @abstractmethod
    @abstractmethod
    def schema_of(self, server: S, dbname: str) -> tuple[object, ...]:
        """What the schema of ``dbname`` is made of (tables, columns, indexes, the migrations'
        version): a database whose schema differs from its template's is not used again."""

    @abstractmethod
    def empty_tables(self, server: S, dbname: str, keep: str) -> None:
        """End the connections still open to ``dbname`` and delete every row (identities restarted)
        of every table but ``keep``."""

    def clone_database(self, server: S, template: str, dbname: str) -> None:
        """Create ``dbname`` as a copy of ``template`` (schema and rows), which nobody uses."""

    # -- shared -----------------------------------------------------------------------------------

    def make_server(
        self,
        port: int,
        *,
        host: str = LOCALHOST,
        user: str | None = None,
        password: str | None = None,
        maintenance_dbname: str | None = None,
        source: str = "running",
        throwaway: ThrowawayServer | None = None,
    ) -> S:
        return self.server_class(
            drivername=self.drivername,
            host=host,
            port=port,
            user=user or self.superuser,
            password=password,
            maintenance_dbname=maintenance_dbname or self.maintenance_dbname,
            source=source,
            throwaway=throwaway,
        )

    def server_from_url(self, url: str) -> S:
        """The server of a URL; its database is the maintenance one."""
        try:
            parsed = make_url(url)
        except Exception as exc:
            raise ServerUnavailable(f"{self.env_url} is not a valid database URL: {exc}") from exc
        if parsed.get_backend_name() != self.backend:
            raise ServerUnavailable(
                f"{self.env_url} must be a {self.backend}:// URL, got backend {parsed.get_backend_name()!r}"
            )
        return self.make_server(
            parsed.port or self.port,
            host=parsed.host or LOCALHOST,
            user=parsed.username,
            password=parsed.password,
            maintenance_dbname=parsed.database,
            source="url",
        )

    def select_server(self, env: Mapping[str, str]) -> S:
        """Find or start the session's server following the rules in this module's docstring."""
        mode = env.get(self.env_mode, "auto").strip().lower() or "auto"
        if mode not in MODES:
            raise ServerUnavailable(f"{self.env_mode}={env[self.env_mode]!r} is not one of {', '.join(MODES)}")
        if mode == "throwaway":
            return self.start_throwaway(env)
        url = env.get(self.env_url)
        if url:
            server = self.server_from_url(url)
            problem = self.probe(server)
            if problem is not None:
                raise ServerUnavailable(f"{self.env_url} points at {server.describe()}, which refused: {problem}")
            return server
        running = self.make_server(self.port)
        problem = self.probe(running)
        if problem is None:
            return running
        if mode == "existing":
            raise ServerUnavailable(f"{self.env_mode}=existing but {running.describe()} refused: {problem}")
        try:
            return self.start_throwaway(env)
        except ServerUnavailable as exc:
            raise ServerUnavailable(
                f"no server on {running.describe()} ({problem}), and starting a throwaway one failed: {exc}"
            ) from exc

    def start_throwaway(self, env: Mapping[str, str]) -> S:
        """Start a throwaway server for this process; the caller must call ``server.throwaway.stop()``."""
        throwaway = ThrowawayServer(self, self.find_programs(env), service_account())
        port = throwaway.start()
        return self.make_server(port, source="throwaway", throwaway=throwaway)

    def find_programs(self, env: Mapping[str, str]) -> Programs:
        """The throwaway server's programs, or an error naming every place looked at."""
        override = env.get(self.env_bindir)
        dirs = [Path(override)] if override else self.program_dirs()
        init_names, serve_names = self.program_names
        # Both from one directory first: initdb and postgres of one version belong together.
        for directory in dirs:
            init, serve = _program_in([directory], init_names), _program_in([directory], serve_names)
            if init and serve:
                return Programs(init, serve)
        # MariaDB's are apart (/usr/bin/mariadb-install-db, /usr/sbin/mariadbd).
        init, serve = _program_in(dirs, init_names), _program_in(dirs, serve_names)
        if init and serve:
            return Programs(init, serve)
        wanted = " and ".join("/".join(names) for names in self.program_names)
        looked = ", ".join(str(d) for d in dirs) or "nowhere"
        raise ServerUnavailable(
            f"{self.label} server programs ({wanted}) not found; looked in: {looked}. "
            f"Install the server's Debian package or set {self.env_bindir}."
        )

    @contextlib.contextmanager
    def fresh_database(self, server: S) -> Iterator[str]:
        """Create an empty database on ``server``, yield its name, then drop it (open connections too)."""
        dbname = new_database_name()
        self.create_database(server, dbname)
        try:
            yield dbname
        finally:
            self.drop_database(server, dbname)

    @contextlib.contextmanager
    def migrated_database(self, server: S) -> Iterator[str]:
        """Create a database holding tickwork's schema at head, yield its name, then drop it.

        It is a copy of this process's template, migrated once (the first time): an Alembic upgrade
        costs 1-3 s a database, a copy a tenth of that, and the store suite makes ~900 of them. The
        migrations themselves are tested on empty databases (:meth:`fresh_database`)."""
        template = self._templates.get(server)
        if template is None:
            template = new_database_name() + "_template"
            self.create_database(server, template)
            self.migrate(server, template)
            self._templates[server] = template
        spare = self._spares.setdefault(server, [])
        if spare:
            dbname = spare.pop()
        else:
            dbname = new_database_name()
            self.clone_database(server, template, dbname)
        try:
            yield dbname
        finally:
            self._put_back(server, template, dbname)

    def _put_back(self, server: S, template: str, dbname: str) -> None:
        """Empty ``dbname`` for the next test of this process, or drop it when its schema is no
        longer the template's (a test altered it) or it cannot be emptied. Emptying its tables
        costs a tenth of dropping it and copying the template again (~0.25 s on PostgreSQL, more
        on MySQL, where a copy is a CREATE TABLE per table)."""
        schemas: dict[str, tuple[object, ...]] = self.__dict__.setdefault("_template_schemas", {})
        try:
            if template not in schemas:
                schemas[template] = self.schema_of(server, template)
            self.empty_tables(server, dbname, keep=VERSION_TABLE)
            reusable = self.schema_of(server, dbname) == schemas[template]
        except Exception:  # e.g. a lock a killed session still held; a new copy is always right
            reusable = False
        if reusable:
            self._spares.setdefault(server, []).append(dbname)
        else:
            self.drop_database(server, dbname)

    def drop_spares(self, server: S) -> None:
        for dbname in self._spares.pop(server, []):
            self.drop_database(server, dbname)

    @property
    def _spares(self) -> dict[S, list[str]]:
        spares: dict[S, list[str]] = self.__dict__.setdefault("_spare_names", {})
        return spares

    @property
    def _templates(self) -> dict[S, str]:
        templates: dict[S, str] = self.__dict__.setdefault("_template_names", {})
        return templates

    @contextlib.contextmanager
    def session_server(self, env: Mapping[str, str]) -> Iterator[S]:
        """The session's server for a fixture: failing loudly (never skipping) when there is none."""
        try:
            server = self.select_server(env)
        except ServerUnavailable as exc:
            pytest.fail(f"{self.label} tests need a server: {exc}", pytrace=False)
        try:
            yield server
        finally:
            with contextlib.suppress(Exception):
                self.drop_spares(server)
            template = self._templates.pop(server, None)
            if template is not None:
                with contextlib.suppress(Exception):  # a server that died meanwhile has nothing to drop
                    self.drop_database(server, template)
            if server.throwaway is not None:
                server.throwaway.stop()


def _program_in(dirs: Sequence[Path], names: Sequence[str]) -> Path | None:
    """The first executable of ``names`` in ``dirs`` (directory by directory)."""
    return next((d / n for d in dirs for n in names if os.access(d / n, os.X_OK)), None)


_SESSION_TOKEN = secrets.token_hex(3)
_db_counter = itertools.count(1)


def new_database_name() -> str:
    """A database name unique across processes, sessions and calls: ``tickwork_test_<pid>_<token>_<n>``."""
    return f"tickwork_test_{os.getpid()}_{_SESSION_TOKEN}_{next(_db_counter)}"


def free_port(host: str = LOCALHOST) -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def service_account() -> Account | None:
    """The account to run a throwaway server as, or None to run it as the current (non-root) user."""
    if os.geteuid() != 0:
        return None
    entry, failure = _user(SERVICE_USER), ""
    if entry is None:
        failure = _create_service_user()
        entry = _user(SERVICE_USER) or _user(FALLBACK_SERVICE_USER)
    if entry is None:
        raise ServerUnavailable(
            f"running as root, the server needs an unprivileged user, but neither {SERVICE_USER!r} "
            f"nor {FALLBACK_SERVICE_USER!r} exists and creating the first failed: {failure}"
        )
    return Account(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid)


def _user(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _create_service_user() -> str:
    """Run ``useradd`` for the service user; return what went wrong, or an empty string.

    Two sessions may race here; the loser's useradd fails with "already exists", which the caller's
    second lookup absorbs.
    """
    useradd = shutil.which("useradd") or ("/usr/sbin/useradd" if os.access("/usr/sbin/useradd", os.X_OK) else None)
    if useradd is None:
        return "useradd not found"
    result = subprocess.run(
        [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
         "--shell", "/usr/sbin/nologin", "--comment", "tickwork throwaway test databases", SERVICE_USER],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return "" if result.returncode == 0 else f"useradd exited {result.returncode}: {result.stderr.strip()}"


def _die_with_parent(sig: signal.Signals) -> None:
    """Ask the kernel to send ``sig`` to the server if the pytest process dies first.

    Runs in the child between fork and exec, after the uid switch, which would otherwise clear it.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, sig)


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


def remove_stale_dirs(tmp_root: Path, prefix: str) -> list[Path]:
    """Remove throwaway directories whose pytest process and server are both gone; return them."""
    removed = []
    for candidate in tmp_root.glob(f"{prefix}*"):
        owner = _read_pid(candidate / OWNER_FILE)
        if owner is None or _pid_alive(owner):
            continue
        served = _read_pid(candidate / SERVER_PID_FILE)
        if served is not None and _pid_alive(served):
            continue
        shutil.rmtree(candidate, ignore_errors=True)
        removed.append(candidate)
    return removed


def tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log, on one line, for error messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return " / ".join(text.strip().splitlines()[-lines:])


class ThrowawayServer:
    """A server created in a temp directory, run as a child process, and deleted when stopped."""

    def __init__(
        self, provider: Provider[Any], programs: Programs, account: Account | None, tmp_root: Path | None = None
    ) -> None:
        """Prepare (but do not start) a server of ``provider``, run as ``account`` if given."""
        self.provider: Provider[Any] = provider
        self.programs = programs
        self.account = account
        self.tmp_root = tmp_root or Path(tempfile.gettempdir())
        self.dir_prefix = f"tickwork-{provider.backend}-"
        self.base_dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None

    @property
    def data_dir(self) -> Path:
        """The server's data directory (inside the temp directory)."""
        assert self.base_dir is not None, "server not started"
        return self.base_dir / "data"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self.process.pid if self.process is not None else None

    def start(self) -> int:
        """Create the data directory, start the server, wait until it answers; return its port.

        On failure everything is stopped and removed before the error propagates.
        """
        remove_stale_dirs(self.tmp_root, self.dir_prefix)
        self.base_dir = Path(tempfile.mkdtemp(prefix=self.dir_prefix, dir=self.tmp_root))
        atexit.register(self.stop)
        try:
            (self.base_dir / OWNER_FILE).write_text(f"{os.getpid()}\n")
            if self.account is not None:
                os.chown(self.base_dir, self.account.uid, self.account.gid)
            self._init()
            self._serve()
        except BaseException:
            self.stop()
            raise
        assert self.port is not None
        return self.port

    def stop(self) -> None:
        """Stop the server and delete its directory; safe to call more than once."""
        self._stop_process()
        base_dir, self.base_dir = self.base_dir, None
        if base_dir is not None:
            shutil.rmtree(base_dir, ignore_errors=True)
        atexit.unregister(self.stop)

    def restart(self, down_seconds: float = 0.0) -> None:
        """Stop the server, stay down ``down_seconds``, start it again on the same port."""
        assert self.port is not None, "server not started"
        self._stop_process()
        time.sleep(down_seconds)
        self._serve(self.port)

    def _stop_process(self) -> None:
        """The provider's stop signals in turn (gentle first) until the server is gone."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sig in self.provider.stop_signals:
            process.send_signal(sig)
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
                return
            except subprocess.TimeoutExpired:
                continue

    def _run_as(self) -> str:
        return self.account.name if self.account is not None else pwd.getpwuid(os.geteuid()).pw_name

    def _popen(self, argv: list[str], stdout: IO[bytes] | int, *, die_with_parent: bool) -> subprocess.Popen[bytes]:
        """Start ``argv`` in the temp directory as the service account (if any), stderr into stdout."""
        assert self.base_dir is not None
        account = self.account
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C", "HOME": str(self.base_dir)}
        if account is not None:
            env.update(USER=account.name, LOGNAME=account.name)
        on_death = functools.partial(_die_with_parent, self.provider.stop_signals[0])
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
            # Own session: a Ctrl-C in the terminal reaches pytest only, which then stops the server in order.
            start_new_session=True,
            preexec_fn=on_death if die_with_parent and sys.platform == "linux" else None,
        )

    def _init(self) -> None:
        process = self._popen(
            self.provider.init_argv(self.programs, self.data_dir), subprocess.PIPE, die_with_parent=False
        )
        try:
            output, _ = process.communicate(timeout=INIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        if process.returncode != 0:
            text = output.decode(errors="replace").strip()
            raise ServerUnavailable(
                f"{self.programs.init} (as user {self._run_as()!r}) exited {process.returncode}: {text}"
            )

    def _serve(self, fixed_port: int | None = None) -> None:
        assert self.base_dir is not None
        failures: list[str] = []
        for attempt in range(1, PORT_ATTEMPTS + 1):
            port = fixed_port or free_port()
            log_path = self.base_dir / f"server-{attempt}.log"
            argv = self.provider.serve_argv(self.programs, self.data_dir, self.base_dir, port)
            with log_path.open("wb") as log:
                self.process = self._popen(argv, log, die_with_parent=True)
            (self.base_dir / SERVER_PID_FILE).write_text(f"{self.process.pid}\n")
            failure = self._wait_ready(self.process, port, log_path)
            if failure is None:
                self.port = port
                return
            failures.append(f"port {port}: {failure}")
            self._stop_process()
            if fixed_port or not any(marker in failure for marker in BIND_FAILURES):
                break
        raise ServerUnavailable(
            f"throwaway {self.provider.label} ({self.programs.serve}, as user {self._run_as()!r}) did not start: "
            + " | ".join(failures)
        )

    def _wait_ready(self, process: subprocess.Popen[bytes], port: int, log_path: Path) -> str | None:
        """None once the server answers, else why it never did (with the log's tail)."""
        server = self.provider.make_server(port)
        deadline = time.monotonic() + self.provider.start_timeout_s
        while True:
            code = process.poll()
            if code is not None:
                return f"{self.programs.serve.name} exited {code}: {tail(log_path)}"
            problem = self.provider.probe(server)
            if problem is None:
                return None
            if time.monotonic() > deadline:
                return f"not answering after {self.provider.start_timeout_s:.0f}s ({problem}): {tail(log_path)}"
            time.sleep(0.05)
