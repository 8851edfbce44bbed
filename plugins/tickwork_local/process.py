"""Process mode: run a job in a child process that the soft timeout really kills."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

from tickwork.plugin.allowed import AllowedModules
from tickwork.plugin.runcontext import RunContext
from tickwork.structures import Outcome, RunStatus

# forkserver: children start from a clean interpreter, not a fork of a threaded scheduler.
_CONTEXT = multiprocessing.get_context("forkserver")


def _child(
    target: str,
    kwargs: dict[str, Any],
    context: RunContext,
    allowed: AllowedModules | None,
    conn: multiprocessing.connection.Connection,
) -> None:
    import asyncio
    import inspect
    import os

    os.setsid()  # its own process group, so a timeout also kills what the job started

    from tickwork.plugin.manager import load_object
    from tickwork.plugin.runcontext import running
    from tickwork.plugin.tracebacks import format_exception

    try:
        # Checked again here: the child imports the module afresh, and runs what it finds.
        func = load_object(target, allowed)
        assert callable(func)
        with running(context):  # asyncio.run() below copies it into its task
            result = func(**kwargs)
            if inspect.iscoroutine(result):
                asyncio.run(result)
        conn.send(None)
    except BaseException as exc:
        conn.send(format_exception(exc))
    finally:
        conn.close()


def _kill_group(proc: multiprocessing.process.BaseProcess) -> None:
    if proc.pid is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


class ProcessRunner:
    """Runs targets in child processes; :meth:`run` blocks its (pool) thread until the child ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: set[multiprocessing.process.BaseProcess] = set()

    def run(
        self,
        target: str,
        kwargs: dict[str, Any],
        context: RunContext,
        timeout: float,
        done: Callable[[Outcome], Any],
        allowed: AllowedModules | None = None,
    ) -> None:
        parent, child = _CONTEXT.Pipe(duplex=False)
        proc = _CONTEXT.Process(
            target=_child, args=(target, kwargs, context, allowed, child), daemon=True, name=f"tickwork:{target}"
        )
        try:
            proc.start()
        except Exception as exc:
            done(Outcome(RunStatus.FAILED, error=f"cannot start a child process: {exc!r}"))
            return
        child.close()
        with self._lock:
            self._children.add(proc)
        try:
            if parent.poll(timeout):
                try:
                    error = parent.recv()
                except EOFError:
                    error = "child process ended without reporting"
                proc.join(5)
                if error is None:
                    done(Outcome(RunStatus.SUCCEEDED))
                else:
                    done(Outcome(RunStatus.FAILED, error=str(error)))
                return
            _kill_group(proc)
            proc.join(5)
            done(Outcome(RunStatus.TIMED_OUT, error=f"soft timeout after {timeout:g}s; child process killed"))
        finally:
            parent.close()
            with self._lock:
                self._children.discard(proc)
            if proc.exitcode is None:
                _kill_group(proc)

    def kill_all(self) -> None:
        with self._lock:
            children = list(self._children)
        for proc in children:
            if proc.is_alive():
                _kill_group(proc)
