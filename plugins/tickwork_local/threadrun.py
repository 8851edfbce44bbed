"""One run of a plain function in the pool, and how a run's end becomes its outcome."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

from tickwork.calls import ReportOnce
from tickwork.runcontext import RunContext, running
from tickwork.structures import JobCall, Outcome, RunStatus
from tickwork.tracebacks import format_exception

from .deadlines import Deadline, Deadlines
from .pool import Pool, PoolShutDown, Task

#: Outcomes are immutable: the common one is built once, not per run.
SUCCEEDED = Outcome(RunStatus.SUCCEEDED)


def outcome_of(exc: BaseException | None) -> Outcome:
    """The outcome of a run that returned (``None``) or raised ``exc``."""
    if exc is None:
        return SUCCEEDED
    if isinstance(exc, PoolShutDown):
        return Outcome(RunStatus.FAILED, error="not run: the local executor shut down first")
    if isinstance(exc, concurrent.futures.CancelledError):
        return Outcome(RunStatus.TIMED_OUT, error="cancelled")
    return Outcome(RunStatus.FAILED, error=format_exception(exc), exception=exc)


def soft_timeout(call: JobCall, once: ReportOnce, cancel: Callable[[], bool], is_coroutine: bool) -> None:
    """Report ``call``'s run timed out (its watchdog fired), cancelling it where that is possible."""
    if is_coroutine:  # a coroutine can really be stopped
        message = f"soft timeout after {call.timeout:g}s; the coroutine was cancelled"
    elif cancel():
        message = f"soft timeout after {call.timeout:g}s while waiting for a thread; cancelled before it started"
    else:
        message = f"soft timeout after {call.timeout:g}s; the thread may still be running (threads cannot be killed)"
    if once(Outcome(RunStatus.TIMED_OUT, error=message)) and is_coroutine:
        cancel()


class ThreadRun:
    """A plain function's run on the pool: what a pool thread calls, what it reports to and what
    its soft-timeout watchdog calls, as methods of one object. Per run, a closure or partial for
    each was a third of ``submit``'s cost in a burst of no-op runs."""

    __slots__ = ("call", "context", "deadline", "deadlines", "func", "kwargs", "once", "pool", "task")

    def __init__(
        self,
        call: JobCall,
        once: ReportOnce,
        context: RunContext,
        func: Callable[..., Any],
        kwargs: dict[str, Any],
        pool: Pool,
        deadlines: Deadlines,
    ) -> None:
        self.call = call
        self.once = once
        self.context = context
        self.func = func
        self.kwargs = kwargs
        self.pool = pool
        self.deadlines = deadlines
        self.task: Task | None = None
        self.deadline: Deadline | None = None

    def start(self) -> None:
        """Queue the run and put its watchdog in place."""
        self.task = self.pool.submit(self.run, self.report)
        self.deadline = self.deadlines.add(self.call.timeout, self.timed_out)
        if self.once.done:  # ended before its watchdog was in place: report() could not cancel it
            self.deadlines.cancel(self.deadline)

    def run(self) -> None:
        """In a pool thread: the function, inside the run's context."""
        with running(self.context):
            self.func(**self.kwargs)

    def report(self, exc: BaseException | None) -> None:
        """In a pool thread, once the function returned or raised."""
        self.once(outcome_of(exc))
        if self.deadline is not None:
            self.deadlines.cancel(self.deadline)

    def cancel(self) -> bool:
        """Stop the run from starting; False once it started (it only works while it waits for a thread)."""
        return self.task is not None and self.pool.cancel(self.task)

    def timed_out(self) -> None:
        """In the watchdog thread, at the soft timeout."""
        soft_timeout(self.call, self.once, self.cancel, False)
