"""The RQ worker-side integration:
``rq worker -w tickwork_rq.worker.Worker -j tickwork_rq.worker.Job``.

For a job a tickwork node enqueued (its ``meta`` names the run), :class:`Job`:

* runs it only if the run moves to ``started`` (a job of a run that started or ended is not run
  again: it ends with no result), the start naming the RQ worker (the run's ``worker``);
* runs it with ``tickwork.current_run()`` returning the run's context;
* records ``succeeded`` or ``failed`` (with the traceback).

The worker classes also record what RQ itself finds out about a job whose worker died, so the run
does not wait for ``report_timeout``:

* a work horse killed mid-job (``Worker``): its parent records the run ``failed`` with RQ's words;
* a job RQ's registry cleanup finds abandoned (its whole worker died: ``AbandonedJobError``): the
  worker running the cleanup records the run ``failed``;
* a job delivered again after RQ recorded a result for it (``rq requeue`` of a failed or abandoned
  job): refused; a run still ``started`` is recorded ``failed`` as lost.

Other jobs run untouched. The worker reads tickwork's database from ``$TICKWORK_CONFIG``, else
``./tickwork.toml``; a worker class of your own may set :data:`reporter` to a
:class:`~tickwork_handoff.reporter.ProcessReporter` of another configuration.
"""

from __future__ import annotations

import logging
import os
from types import TracebackType
from typing import Any

import rq
from rq.exceptions import AbandonedJobError

from tickwork.plugin import tracing
from tickwork.plugin.runcontext import running
from tickwork.plugin.tracebacks import format_exception
from tickwork_handoff import identity
from tickwork_handoff.reporter import ProcessReporter

log = logging.getLogger("tickwork.rq")

#: The reports of this process (and of the work horses it forks, each with its own connections).
reporter = ProcessReporter()

#: What the history says of a job RQ's cleanup found abandoned.
ABANDONED = (
    "AbandonedJobError: RQ's registry cleanup found the job in its started registry after its "
    "worker stopped sending heartbeats (the worker died mid-job)"
)


class Job(rq.job.Job):
    """An RQ job that reports to tickwork when tickwork enqueued it."""

    def perform(self) -> Any:
        context = identity.context_of(self.meta)
        if context is None:
            return super().perform()
        rep = reporter.get()
        # RQ names the worker performing the job just before perform() (`rq info` shows the name).
        if not rep.begin(context, redelivered=self._ran_before(), worker=self.worker_name or None):
            return None
        try:
            # A span in the trace of the node's publish when this worker traces (an [otel] table).
            with running(context), tracing.task_span(context, self.meta.get, "rq"):
                result = super().perform()
        except BaseException as exc:
            rep.failed(context, format_exception(exc))
            raise
        rep.succeeded(context)
        return result

    def _ran_before(self) -> bool:
        # RQ keeps a result for every execution that ended, abandoned ones included: a job with
        # one is being delivered again (RQ's own retry or `rq requeue`), never for the first time.
        try:
            return self.latest_result() is not None
        except Exception:  # an unreadable result stream says nothing either way
            log.exception("tickwork: cannot read the results of job %s", self.id)
            return False


def _report_lost(job: rq.job.Job, reason: str) -> None:
    # Called by RQ from its own bookkeeping: a report that fails is logged, never raised into it.
    context = identity.context_of(job.meta)
    if context is None:
        return
    try:
        reporter.get().lost(context, reason)
    except Exception:
        log.exception("tickwork: cannot record the loss of run %d of %s", context.run_id, context.schedule)


def _abandoned(
    job: rq.job.Job, exc_type: type[BaseException], exc_value: BaseException, tb: TracebackType | None
) -> None:
    """RQ exception handler: the started registry's cleanup calls it for each abandoned job."""
    if isinstance(exc_type, type) and issubclass(exc_type, AbandonedJobError):
        _report_lost(job, ABANDONED)


def _warm_up() -> None:
    try:
        reporter.get()
    except Exception:
        log.exception("tickwork: cannot open tickwork's store; jobs enqueued by tickwork will fail")


class Worker(rq.Worker):
    """An RQ worker that opens tickwork's store once, before its first job: the work horses it
    forks reuse it (each with connections of its own) instead of connecting for every job."""

    job_class = Job

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # First: a handler of the user's that returns False stops the ones after it.
        self._exc_handlers.insert(0, _abandoned)

    def work(self, *args: Any, **kwargs: Any) -> bool:
        _warm_up()
        return bool(super().work(*args, **kwargs))

    def handle_work_horse_killed(self, job: rq.job.Job, retpid: int, ret_val: int, rusage: Any) -> None:
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)  # type: ignore[no-untyped-call]
        signal_text = f", signal {os.WTERMSIG(ret_val)}" if ret_val and os.WIFSIGNALED(ret_val) else ""
        _report_lost(job, f"RQ's work horse (pid {retpid}{signal_text}) ended before the job reported")


class SimpleWorker(rq.SimpleWorker):
    """RQ's worker that runs jobs in its own process (no fork per job), reporting to tickwork:
    many short jobs a second, at the price of RQ's isolation of each job."""

    job_class = Job

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # First: a handler of the user's that returns False stops the ones after it.
        self._exc_handlers.insert(0, _abandoned)

    def work(self, *args: Any, **kwargs: Any) -> bool:
        _warm_up()
        return bool(super().work(*args, **kwargs))
