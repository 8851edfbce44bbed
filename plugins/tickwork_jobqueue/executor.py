"""The ``jobqueue`` executor: a fire becomes a row in the queue table, unless one is still pending.

The scheduler never runs the job itself (the Docspell pattern): it only submits it, and does not
submit while a queued or running job of the same schedule exists, so a slow job or a stopped
worker pool can never pile up copies of one task. Workers (:mod:`tickwork_jobqueue.worker`) run
the jobs and record how they ended in the same table.

What tickwork's history records for a fire is therefore the *enqueue*: ``succeeded`` (queued),
``skipped`` (a previous job of the schedule is still pending), ``failed`` or ``timed_out`` (the
queue database could not be written in time). How the job itself went is in the queue table.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from tickwork.abc import Executor
from tickwork.errors import ExecutorError
from tickwork.plugin.allowed import allowed_modules as allowed_modules_of
from tickwork.plugin.calls import ReportOnce, call_arguments
from tickwork.plugin.tracebacks import format_exception
from tickwork.structures import JobCall, Outcome, RunStatus

from . import queries
from .database import create_queue_engine, describe, ensure_table, is_timeout, parse_url
from .settings import JobQueueSettings
from .targets import resolve, split_target

log = logging.getLogger("tickwork.jobqueue")


class JobQueueExecutor(Executor):
    """Enqueues each run into the ``tickwork_jobqueue`` table of the database at ``url``.

    :param url: ``sqlite:///PATH`` or ``postgresql://user:password@host/db`` (``postgresql+psycopg://``
        and ``postgres://`` are accepted too); ``${ENV}`` references are expanded by the config loader
    :param options: the other keys of :class:`~tickwork_jobqueue.settings.JobQueueSettings`
        (``threads``, ``create_table``, ``import_targets``, ``allowed_modules``: give the workers
        the same list with ``--allowed-modules``, which check it again)
    """

    section = JobQueueSettings
    settings: JobQueueSettings

    def __init__(self, url: str | None = None, **options: Any) -> None:
        super().__init__(**({} if url is None else {"url": url}), **options)
        self.url = parse_url(self.settings.url, "url")
        self.allowed = allowed_modules_of(self.settings.allowed_modules, "[executor.jobqueue] allowed_modules")
        self.threads = self.settings.threads
        self.create_table = self.settings.create_table
        self.import_targets = self.settings.import_targets
        self._lock = threading.Lock()
        self._state = "new"
        self._engine: Engine | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._pending: set[concurrent.futures.Future[None]] = set()

    def __repr__(self) -> str:
        return f"<JobQueueExecutor {describe(self.url)} state={self._state}>"

    # -- targets -----------------------------------------------------------------------------------

    def validate_target(self, target: str, arguments: dict[str, Any]) -> None:
        """Check ``module:function`` syntax and JSON arguments; import the target when possible.

        A module that cannot be imported on this host is accepted with a warning: workers may run
        on other hosts, with code the scheduler does not have. A module that imports but lacks the
        function, names something not callable, or whose function needs an argument the schedule
        does not store is rejected.

        :raises tickwork.errors.ExecutorError: naming the problem
        """
        split_target(target)
        if self.allowed is not None:
            self.allowed.check(target)  # before resolve(): importing a module runs its code
        try:
            json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ExecutorError(f"jobqueue target {target!r}: arguments are not JSON-serialisable: {exc}") from None
        if not self.import_targets:
            return
        try:
            func = resolve(target, self.allowed)
        except ImportError as exc:
            log.warning(
                "jobqueue target %r cannot be imported on this host (%s); accepted, as workers may run "
                "other code - make sure it is importable where the workers run",
                target,
                exc,
            )
            return
        try:
            call_arguments(func, arguments)
        except TypeError as exc:
            raise ExecutorError(f"jobqueue target {target!r}: {exc}") from None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Connect, create (or check) the queue table and start the threads.

        :raises tickwork.errors.ExecutorError: if the queue database cannot be reached
        :raises tickwork.errors.ConfigError: if ``create_table`` is false and the table is missing
        """
        with self._lock:
            if self._state != "new":
                raise ExecutorError(f"jobqueue executor: start() called while {self._state}")
            engine = create_queue_engine(self.url, pool_size=self.threads)
            try:
                ensure_table(engine, create=self.create_table)
            except BaseException as exc:
                engine.dispose()
                if isinstance(exc, DBAPIError):
                    raise ExecutorError(
                        f"jobqueue: cannot prepare the queue in {describe(self.url)}: {exc.orig}"
                    ) from exc
                raise
            self._engine = engine
            self._pool = concurrent.futures.ThreadPoolExecutor(self.threads, thread_name_prefix="tickwork-jobqueue")
            self._state = "running"

    def submit(self, call: JobCall, on_done: Callable[[Outcome], None]) -> None:
        """Hand the enqueue to a pool thread and return at once.

        After :meth:`shutdown`, ``on_done`` is called at once with a FAILED outcome.

        :raises tickwork.errors.ExecutorError: if :meth:`start` was not called
        """
        report = ReportOnce(on_done, call.run_id)
        with self._lock:
            if self._state == "new":
                raise ExecutorError("jobqueue executor: submit() called before start()")
            if self._state == "running":
                assert self._pool is not None
                future = self._pool.submit(self._enqueue, call, report)
                self._pending.add(future)
            else:
                future = None
        if future is None:
            report(Outcome(RunStatus.FAILED, error="not enqueued: the jobqueue executor is shut down"))
            return

        def settled(done: concurrent.futures.Future[None]) -> None:
            with self._lock:
                self._pending.discard(done)
            if done.cancelled():  # shutdown(wait=False) dropped it before a thread took it
                report(Outcome(RunStatus.FAILED, error="not enqueued: the jobqueue executor shut down first"))

        future.add_done_callback(settled)

    def _enqueue(self, call: JobCall, report: ReportOnce) -> None:
        assert self._engine is not None
        if self.allowed is not None:
            # Again at run time: the schedules table may have been written without tickwork.
            try:
                self.allowed.check(call.target)
            except ExecutorError as exc:
                report(Outcome(RunStatus.FAILED, error=f"not enqueued: {exc}"))
                return
        try:
            result = queries.enqueue(self._engine, call, timeout=call.timeout)
        except DBAPIError as exc:
            if is_timeout(exc):
                report(
                    Outcome(
                        RunStatus.TIMED_OUT,
                        error=f"not enqueued: {describe(self.url)} was locked for the run's whole timeout "
                        f"of {call.timeout:g}s ({exc.orig})",
                    )
                )
            else:
                report(Outcome(RunStatus.FAILED, error=f"not enqueued: {describe(self.url)}: {exc.orig}"))
            return
        except Exception as exc:
            log.exception("jobqueue: enqueueing run %s failed", call.run_id)
            report(Outcome(RunStatus.FAILED, error=f"not enqueued: {format_exception(exc)}"))
            return
        if result.job_id is not None:
            report(Outcome(RunStatus.SUCCEEDED, detail=f"enqueued job {result.job_id}"))
        else:
            report(
                Outcome(
                    RunStatus.SKIPPED,
                    error=f"previous job of this schedule is still {result.blocked_state} (id {result.blocked_by})",
                )
            )

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting calls. With ``wait``, give pending enqueues up to ``timeout`` seconds;
        without it, enqueues not yet started are dropped and reported FAILED."""
        with self._lock:
            previous, self._state = self._state, "closed"
            pending = set(self._pending)
        if previous != "running":
            return
        assert self._pool is not None and self._engine is not None
        self._pool.shutdown(wait=False, cancel_futures=not wait)
        if wait:
            _, still_running = concurrent.futures.wait(pending, timeout)
            if still_running:
                log.warning("jobqueue: %d enqueue(s) still running at shutdown", len(still_running))
        # Safe with enqueues still running: their checked-out connections close when returned.
        self._engine.dispose()
