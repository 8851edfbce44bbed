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
    """Runs targets in child processes; :meth:`run` blocks its (pool) thread until the child ends.
    :meth:`stop` kills one run's child (``overlap = "cancel_other"``): that run then reports
    nothing, its stopper reports it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: set[multiprocessing.process.BaseProcess] = set()
        #: The children of runs that may be stopped, by run id, and the runs asked to stop.
        self._by_run: dict[int, multiprocessing.process.BaseProcess] = {}
        self._stopped: set[int] = set()

    def stop(self, run_id: int) -> None:
        """Kill the child of run ``run_id`` (or keep it from starting) and keep the run from
        reporting its end: the caller reports it."""
        with self._lock:
            self._stopped.add(run_id)
            proc = self._by_run.get(run_id)
        if proc is not None and proc.is_alive():
            _kill_group(proc)

    def run(
        self,
        target: str,
        kwargs: dict[str, Any],
        context: RunContext,
        timeout: float,
        done: Callable[[Outcome], Any],
        allowed: AllowedModules | None = None,
        run_id: int | None = None,
    ) -> None:
        if run_id is not None:
            with self._lock:
                if run_id in self._stopped:  # stopped before it started
                    self._stopped.discard(run_id)
                    return
        try:
            self._run(target, kwargs, context, timeout, done, allowed, run_id)
        finally:
            if run_id is not None:
                with self._lock:
                    self._by_run.pop(run_id, None)
                    self._stopped.discard(run_id)

    def _run(
        self,
        target: str,
        kwargs: dict[str, Any],
        context: RunContext,
        timeout: float,
        done: Callable[[Outcome], Any],
        allowed: AllowedModules | None,
        run_id: int | None,
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
            if run_id is not None:
                self._by_run[run_id] = proc
                if run_id in self._stopped:  # stopped while it started
                    _kill_group(proc)
        try:
            if parent.poll(timeout):
                if self._was_stopped(run_id):
                    proc.join(5)
                    return
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
            if self._was_stopped(run_id):
                return
            done(Outcome(RunStatus.TIMED_OUT, error=f"soft timeout after {timeout:g}s; child process killed"))
        finally:
            parent.close()
            with self._lock:
                self._children.discard(proc)
            if proc.exitcode is None:
                _kill_group(proc)

    def _was_stopped(self, run_id: int | None) -> bool:
        if run_id is None:
            return False
        with self._lock:
            return run_id in self._stopped

    def kill_all(self) -> None:
        with self._lock:
            children = list(self._children)
        for proc in children:
            if proc.is_alive():
                _kill_group(proc)
