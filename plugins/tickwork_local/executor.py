"""The ``local`` executor: runs Python functions in this process.

- plain functions run in a bounded thread pool;
- ``async def`` functions run on one event loop in a background thread;
- ``mode = "process"`` (per config, or per schedule with the argument ``_tickwork_mode``) runs
  the function in a child process that a soft timeout really kills.

A thread cannot be killed: in thread mode a run past its timeout is recorded ``timed_out`` at the
deadline, but the function keeps running until it returns (its late result is ignored). For the
same reason :meth:`LocalExecutor.cancel` (``overlap = "cancel_other"``) stops process and asyncio
runs only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

from tickwork.abc import BodyFence, Executor
from tickwork.errors import ExecutorError
from tickwork.plugin.allowed import AllowedModules
from tickwork.plugin.allowed import allowed_modules as allowed_modules_of
from tickwork.plugin.calls import ReportOnce, call_arguments, check_arguments
from tickwork.plugin.manager import load_object
from tickwork.plugin.runcontext import RunContext, running
from tickwork.structures import JobCall, Outcome, RunStatus, StartVerdict

from .deadlines import Deadline, Deadlines
from .pool import FENCE_POLL, NotStarted, Pool
from .process import ProcessRunner
from .settings import MODES, LocalSettings
from .threadrun import ThreadRun, outcome_of, soft_timeout

log = logging.getLogger("tickwork.local")


async def _await_in(
    context: RunContext, func: Callable[..., Any], kwargs: dict[str, Any], fence: BodyFence | None
) -> Any:
    if fence is not None:
        # As the task begins, not when it was scheduled: a loop held up (a blocking coroutine, a
        # frozen process) may begin it after its node was declared dead (see Pool._refusal).
        verdict = fence.verdict()
        while verdict is StartVerdict.WAIT:
            await asyncio.sleep(FENCE_POLL)
            verdict = fence.verdict()
        if verdict is StartVerdict.DROP:
            raise NotStarted
    with running(context):  # set inside the task, whose context is its own copy
        return await func(**kwargs)


def resolve(target: str, allowed: AllowedModules | None = None) -> Callable[..., Any]:
    """Import ``module:function`` and check it is callable.

    :param allowed: checked before the import, and what the target reaches after
    :raises tickwork.errors.ExecutorError: naming the target
    """
    try:
        obj = load_object(target, allowed)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ExecutorError(f"cannot resolve target {target!r}: {exc}") from exc
    if not callable(obj):
        raise ExecutorError(f"target {target!r} is not callable")
    return obj


class LocalExecutor(Executor):
    """Run Python callables named ``package.module:function``.

    :param options: the keys of :class:`~tickwork_local.settings.LocalSettings` (``max_workers``,
        ``mode``, ``allowed_modules``: when set, only targets in these packages are imported and
        run; others are refused when added and again at run time, see docs/security.md)
    """

    section = LocalSettings
    settings: LocalSettings

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.allowed = allowed_modules_of(self.settings.allowed_modules, "[executor.local] allowed_modules")
        self.max_workers = self.settings.max_workers
        self.mode = self.settings.mode
        self._pool: Pool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._deadlines = Deadlines()
        self._processes = ProcessRunner()
        self._cache: dict[str, tuple[Callable[..., Any], bool]] = {}
        #: The runs cancel() can stop (process and asyncio mode), by run id: the once-only report
        #: and how to stop it. Threads are not listed: they cannot be stopped.
        self._stoppable: dict[int, tuple[ReportOnce, Callable[[], object], bool]] = {}
        self._stoppable_lock = threading.Lock()

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        if self.allowed is not None:
            self.allowed.check(target)  # before the mode's error: an outside target is named as such
        mode = arguments.get("_tickwork_mode", self.mode)
        if mode not in MODES:
            raise ExecutorError(f"argument _tickwork_mode: {mode!r} is not one of {', '.join(MODES)}")
        func = resolve(target, self.allowed)
        try:
            check_arguments(func, arguments)
        except TypeError as exc:
            raise ExecutorError(f"target {target!r}: {exc}") from exc

    def start(self) -> None:
        self._pool = Pool(self.max_workers, "tickwork-job")
        self._pool.start()
        self._deadlines.start()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            self._loop_thread = threading.Thread(target=loop.run_forever, name="tickwork-async", daemon=True)
            self._loop_thread.start()
            self._loop = loop
        return self._loop

    def bind(self, target: str, func: Callable[..., Any]) -> None:
        """Run ``func`` for ``target`` instead of importing it: the test harness
        (:class:`tickwork.testing.SchedulerHarness`) hands in the functions under test, so they
        go through exactly the call path below (process mode still imports ``target`` in the child).
        """
        self._cache[target] = (func, inspect.iscoroutinefunction(func))

    def _function(self, target: str) -> tuple[Callable[..., Any], bool]:
        """The target's function and whether it is a coroutine function, resolved once."""
        found = self._cache.get(target)
        if found is None:
            # Again at run time: the schedules table may have been written without tickwork.
            func = resolve(target, self.allowed)
            found = self._cache[target] = (func, inspect.iscoroutinefunction(func))
        return found

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        self.submit_fenced(call, on_done, None)

    def submit_fenced(self, call: JobCall, on_done: Callable[[Outcome], None], fence: BodyFence | None) -> None:
        """:meth:`submit`, with the engine's start fence (:mod:`tickwork.engine.fence`): asked as
        the run's body is about to start (a worker thread takes it from the queue, a child is
        about to be started, the coroutine begins), not when it was queued. A run it drops is
        not started and reported with :data:`tickwork.engine.fence.NOT_STARTED`."""
        if self._pool is None:
            raise RuntimeError("LocalExecutor.submit() before start()")
        context = RunContext.of(call)
        try:
            func, is_coroutine = self._function(call.target)
            kwargs = call_arguments(func, call.arguments, context)
        except (ExecutorError, TypeError) as exc:
            ReportOnce(on_done, call.run_id)(Outcome(RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}"))
            return
        mode = call.arguments.get("_tickwork_mode", self.mode)
        if mode != "process" and not is_coroutine:
            ThreadRun(call, on_done, context, func, kwargs, self._pool, self._deadlines, fence).start()
            return
        once = ReportOnce(self._unlisting(call.run_id, on_done), call.run_id)
        if mode == "process":
            with self._stoppable_lock:
                self._stoppable[call.run_id] = (once, lambda: self._processes.stop(call.run_id), True)
            # The runner reports the child's outcome (and kills it at the deadline) itself.
            self._pool.submit(
                lambda: self._processes.run(
                    call.target, kwargs, context, call.timeout, once, self.allowed, run_id=call.run_id
                ),
                lambda exc: exc is not None and once(outcome_of(exc)),
                fence,
            )
            return
        watch: list[Deadline] = []

        def report(exc: BaseException | None) -> None:
            once(outcome_of(exc))
            if watch:
                self._deadlines.cancel(watch[0])

        # Listed before it starts: a task that ends at once takes itself off the list.
        started: list[concurrent.futures.Future[Any]] = []
        with self._stoppable_lock:
            self._stoppable[call.run_id] = (once, lambda: started and started[0].cancel(), False)
        future = asyncio.run_coroutine_threadsafe(_await_in(context, func, kwargs, fence), self._event_loop())
        started.append(future)
        future.add_done_callback(
            lambda f: report(concurrent.futures.CancelledError() if f.cancelled() else f.exception())
        )
        watch.append(self._deadlines.add(call.timeout, lambda: soft_timeout(call, once, future.cancel, True)))
        if once.done:  # ended before its watchdog was in place: report() could not cancel it
            self._deadlines.cancel(watch[0])

    def _unlisting(self, run_id: int, on_done: Callable[[Outcome], None]) -> Callable[[Outcome], None]:
        """``on_done``, also taking the run off the stoppable list once it reports."""

        def report(outcome: Outcome) -> None:
            with self._stoppable_lock:
                self._stoppable.pop(run_id, None)
            on_done(outcome)

        return report

    def cancel(self, run_id: int, reason: str) -> bool:
        """Stop a process-mode run (its child's process group is killed) or an asyncio run (its
        task is cancelled) and report it ``cancelled``; a thread-mode run cannot be stopped."""
        with self._stoppable_lock:
            found = self._stoppable.get(run_id)
        if found is None:
            return False
        once, stop, kill_first = found
        if once.done:
            return False
        cancelled = Outcome(RunStatus.CANCELLED, error=reason)
        if kill_first:
            # A child is killed before the report, so the next fire never overlaps it (its
            # runner then reports nothing).
            stop()
            return once(cancelled)
        # A task is reported first, so that its own end (CancelledError) is not what is recorded.
        if not once(cancelled):
            return False
        stop()
        return True

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait)
            self._pool = None
        self._processes.kill_all()
        self._deadlines.stop()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._loop_thread is not None:
                self._loop_thread.join(timeout=2)
            self._loop = None
