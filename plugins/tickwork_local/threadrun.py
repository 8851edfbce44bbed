"""One run of a plain function in the pool, and how a run's end becomes its outcome."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

from tickwork.abc import BodyFence
from tickwork.plugin.calls import ReportOnce
from tickwork.plugin.runcontext import RunContext, running
from tickwork.plugin.tracebacks import format_exception
from tickwork.structures import NOT_STARTED, JobCall, Outcome, RunStatus

from .deadlines import Deadlines
from .pool import NotStarted, Pool, PoolShutDown

#: Outcomes are immutable: the common one is built once, not per run.
SUCCEEDED = Outcome(RunStatus.SUCCEEDED)


def outcome_of(exc: BaseException | None) -> Outcome:
    """The outcome of a run that returned (``None``) or raised ``exc``."""
    if exc is None:
        return SUCCEEDED
    if isinstance(exc, NotStarted):
        return NOT_STARTED  # this very object: the engine writes nothing for it
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


class ThreadRun(ReportOnce):
    """A plain function's run on the pool, as one object: its once-only report (``on_done`` gets
    whichever of its end, its soft timeout or a shutdown comes first), the pool's task
    (:class:`~.pool.PoolTask`) and its watchdog's entry (:class:`~.deadlines.Watched`). A report
    wrapper, a task and a deadline of their own per run, with a bound method handed to each,
    cost 1.1-2.0 µs of the 41 µs of process CPU per fire of a 60,000-fire drain (docs/benchmarks.md,
    "SQLite bursts: the local executor's share")."""

    __slots__ = ("_state", "callback", "context", "deadlines", "fence", "func", "job", "kwargs", "lane", "pool")

    def __init__(
        self,
        job: JobCall,
        on_done: Callable[[Outcome], None],
        context: RunContext,
        func: Callable[..., Any],
        kwargs: dict[str, Any],
        pool: Pool,
        deadlines: Deadlines,
        fence: BodyFence | None = None,
    ) -> None:
        super().__init__(on_done, job.run_id)
        self.job = job
        self.fence = fence  # the pool's (PoolTask): asked as a worker takes the run
        self.context = context
        self.func = func
        self.kwargs = kwargs
        self.pool = pool
        self.deadlines = deadlines
        self._state = "queued"  # the pool's (PoolTask)
        self.lane = job.timeout
        self.callback: Callable[[], None] | None = None  # the watchdog's (Watched)

    def start(self) -> None:
        """Queue the run and put its watchdog in place."""
        # A cycle (this run -> its bound method -> this run) until the watchdog lets go of the
        # callback: when the run is reported (report() cancels it) or the timeout fires.
        self.callback = self.timed_out
        self.pool.put(self)
        self.deadlines.watch(self)
        if self.done:  # ended before its watchdog was in place: report() may have come first
            self.deadlines.cancel(self)

    def call(self) -> None:
        """In a pool thread: the function, inside the run's context."""
        with running(self.context):
            self.func(**self.kwargs)

    def report(self, exc: BaseException | None) -> None:
        """In a pool thread, once the function returned or raised (or the pool shut down first)."""
        self(outcome_of(exc))
        self.deadlines.cancel(self)

    def let_go(self) -> None:
        """The run is over: drop its arguments (a cancelled entry can wait in its watchdog lane
        until swept out, and arguments can be large)."""
        self.kwargs = _NO_ARGUMENTS

    def cancel(self) -> bool:
        """Stop the run from starting; False once it started (it only works while it waits for a thread)."""
        return self.pool.cancel(self)

    def timed_out(self) -> None:
        """In the watchdog thread, at the soft timeout."""
        soft_timeout(self.job, self, self.cancel, False)


_NO_ARGUMENTS: dict[str, Any] = {}
