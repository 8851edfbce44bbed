"""Short ``tickwork`` commands, each in a real process of its own, forked from a server process that
imported tickwork once.

The suite runs hundreds of short commands (``next``, ``jobs add``, ``config check``, every command
of the docs) to check what a user sees: their words, their exit status, their output at a given
terminal width. Each ``python -m tickwork`` paid an interpreter's start and tickwork's imports
(0.4-0.8 s of CPU) for a command that then ran in milliseconds; on two cores that was a large part
of the suite's time. Here one server per test process imports tickwork and the SQL stores' modules,
and forks a child per command: the child takes the command's working directory, environment and
arguments, writes to its own stdout and stderr, and exits with the command's status, as
``python -m tickwork`` would. The server is single-threaded (forking the test process, whose
xdist threads hold locks, would not be safe) and never runs a command itself, so every child
starts from the same state: nothing a command configures (logging, the plugin manager, caches)
reaches the next one.

What a fork cannot show, a real ``python -m tickwork`` still does elsewhere: start-up imports
(tests/system/test_wheel.py, tests/system/test_newcomer.py), nodes (``tickwork run``), servers
(``tickwork web``). Use :func:`run_tickwork` for commands that end by themselves.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

#: Modules the server imports before it forks anything (what most commands need anyway).
PRELOAD = (
    "tickwork.cli.main",
    "tickwork.cli.commands",
    "tickwork.admin",
    "tickwork.sql.migrations",
    "tickwork_sqlite.store",
    "tickwork_postgres.store",
    "tickwork_mysql.store",
)

SERVER = r"""
import importlib, json, os, sys

def child(request):
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # What `python -m` puts first on sys.path, then $PYTHONPATH, as a new interpreter would.
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [request["cwd"], *extra]
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")
        sys.argv = [request["argv0"], *request["args"]]
        try:
            if request.get("module"):
                # `python -m MODULE ARGS`: the module's `__main__` block, its exit status.
                import runpy
                runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
                code = 0
            else:
                from tickwork.cli.main import main
                code = main(request["args"])
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            import logging
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)

for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
requests, replies = sys.stdin.buffer, sys.stdout.buffer
replies.write(b'{"ready": true}\n')
replies.flush()
for line in requests:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(request)
    replies.write(json.dumps({"pid": pid}).encode() + b"\n")
    replies.flush()
    _, status = os.waitpid(pid, 0)
    replies.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    replies.flush()
"""


class Lines:
    """Whole lines read from a pipe's descriptor, each waited for at most a timeout, through this
    object's own buffer. Not ``select`` on a pipe and ``readline`` on its buffered reader: the
    fork server answers a command that ends at once with two lines before the first is read, the
    reader took both into its buffer, ``select`` then saw nothing left to read, the test waited
    its whole timeout for the second line, and the next command took it as its own (a CI run:
    three tests failed in a row)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending = b""

    def next(self, timeout: float) -> bytes | None:
        """The next line without its newline, ``None`` after ``timeout`` seconds.

        :raises EOFError: the writer closed the pipe
        """
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            readable, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
            if not readable:
                return None
            chunk = os.read(self._fd, 65536)
            if not chunk:
                raise EOFError
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line


class ForkServer:
    """One server process; :meth:`run` is called by one test at a time (a lock keeps it so)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._lock = threading.Lock()
        self._dir = Path(tempfile.mkdtemp(prefix="tickwork-forkedcli-"))
        self._proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, json.dumps(PRELOAD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(env),
            cwd=self._dir,
        )
        assert self._proc.stdout is not None
        self._lines = Lines(self._proc.stdout.fileno())
        ready = self._reply(120.0)
        assert ready == {"ready": True}, ready

    def _reply(self, timeout: float) -> dict[str, Any] | None:
        try:
            line = self._lines.next(timeout)
        except EOFError:
            raise RuntimeError(f"the fork server exited with status {self._proc.wait()}") from None
        if line is None:
            return None
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(
        self,
        args: Sequence[str],
        *,
        cwd: Path | str,
        env: Mapping[str, str],
        timeout: float,
        module: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        with self._lock:
            stdout, stderr = self._dir / "stdout", self._dir / "stderr"
            request = {
                "args": list(args),
                "module": module,
                "argv0": module or str(Path(sys.executable).parent / "tickwork"),
                "cwd": os.fspath(Path(cwd).resolve()),
                "env": dict(env),
                "stdout": str(stdout),
                "stderr": str(stderr),
            }
            stdin: IO[bytes] | None = self._proc.stdin
            assert stdin is not None
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
            started = self._reply(30.0)
            assert started is not None and "pid" in started, started
            ended = self._reply(timeout)
            shown = ["python", "-m", module, *args] if module else ["tickwork", *args]
            if ended is None:
                os.kill(started["pid"], signal.SIGKILL)
                self._reply(30.0)
                raise subprocess.TimeoutExpired(shown, timeout)
            return subprocess.CompletedProcess(
                shown,
                ended["status"],
                stdout.read_text(encoding="utf-8", errors="replace"),
                stderr.read_text(encoding="utf-8", errors="replace"),
            )

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        for name in ("stdout", "stderr"):
            (self._dir / name).unlink(missing_ok=True)
        self._dir.rmdir()


_servers: dict[tuple[tuple[str, str], ...], ForkServer] = {}


def _server_env() -> dict[str, str]:
    """The test process's environment: the server imports tickwork from where a ``python -m
    tickwork`` started by this test process would (``$PYTHONPATH`` first)."""
    return dict(os.environ)


def run_tickwork(
    args: Sequence[str], *, cwd: Path | str, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``python -m tickwork ARGS`` in ``cwd`` with ``env`` (default: this process's), in a process
    forked from the server: the result of ``subprocess.run(..., capture_output=True, text=True)``."""
    return run_module("", args, cwd=cwd, env=env, timeout=timeout)


def run_module(
    module: str,
    args: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE ARGS`` (a command of a plugin, e.g. ``tickwork_jobqueue.worker``) in a
    process forked from the server, as :func:`run_tickwork`; ``""`` runs tickwork's own CLI."""
    environment = dict(os.environ if env is None else env)
    # The child puts the command's $PYTHONPATH first on sys.path (its job modules are found), but
    # tickwork itself is already imported: a server per place tickwork comes from, so that a
    # $PYTHONPATH naming another checkout's src/ gets that checkout's tickwork.
    source = _tickwork_source(environment.get("PYTHONPATH", ""))
    key = (("tickwork", source),)
    server = _servers.get(key)
    if server is None:
        server = _servers[key] = ForkServer({**_server_env(), "PYTHONPATH": source})
    return server.run(args, cwd=cwd, env=environment, timeout=timeout, module=module or None)


def _tickwork_source(pythonpath: str) -> str:
    """The entries of ``pythonpath`` up to the first one holding the ``tickwork`` package ("" when
    none does: the installed one), and the plugins' directory beside a ``src/``."""
    kept = []
    for entry in (e for e in pythonpath.split(os.pathsep) if e):
        kept.append(entry)
        if (Path(entry) / "tickwork" / "__init__.py").is_file():
            plugins = Path(entry).parent / "plugins"
            if Path(entry).name == "src" and plugins.is_dir():
                kept.append(str(plugins))
            return os.pathsep.join(kept)
    return ""


@atexit.register
def _close_servers() -> None:
    for server in _servers.values():
        server.close()
    _servers.clear()
