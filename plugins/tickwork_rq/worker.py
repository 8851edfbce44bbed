"""The RQ worker-side integration:
``rq worker -w tickwork_rq.worker.Worker -j tickwork_rq.worker.Job``.

For a job a tickwork node enqueued (its ``meta`` names the run), :class:`Job`:

* runs it only if the run moves to ``started`` (a job of a run that started or ended is not run
  again: it ends with no result);
* runs it with ``tickwork.current_run()`` returning the run's context;
* records ``succeeded`` or ``failed`` (with the traceback).

Other jobs run untouched. The worker reads tickwork's database from ``$TICKWORK_CONFIG``, else
``./tickwork.toml``; a worker class of your own may set :data:`reporter` to a
:class:`~tickwork_handoff.reporter.ProcessReporter` of another configuration.
"""

from __future__ import annotations

import logging
from typing import Any

import rq

from tickwork.plugin.runcontext import running
from tickwork.plugin.tracebacks import format_exception
from tickwork_handoff import identity
from tickwork_handoff.reporter import ProcessReporter

log = logging.getLogger("tickwork.rq")

#: The reports of this process (and of the work horses it forks, each with its own connections).
reporter = ProcessReporter()


class Job(rq.job.Job):
    """An RQ job that reports to tickwork when tickwork enqueued it."""

    def perform(self) -> Any:
        context = identity.context_of(self.meta)
        if context is None:
            return super().perform()
        rep = reporter.get()
        if not rep.begin(context):
            return None
        try:
            with running(context):
                result = super().perform()
        except BaseException as exc:
            rep.failed(context, format_exception(exc))
            raise
        rep.succeeded(context)
        return result


def _warm_up() -> None:
    try:
        reporter.get()
    except Exception:
        log.exception("tickwork: cannot open tickwork's store; jobs enqueued by tickwork will fail")


class Worker(rq.Worker):
    """An RQ worker that opens tickwork's store once, before its first job: the work horses it
    forks reuse it (each with connections of its own) instead of connecting for every job."""

    job_class = Job

    def work(self, *args: Any, **kwargs: Any) -> bool:
        _warm_up()
        return bool(super().work(*args, **kwargs))


class SimpleWorker(rq.SimpleWorker):
    """RQ's worker that runs jobs in its own process (no fork per job), reporting to tickwork:
    many short jobs a second, at the price of RQ's isolation of each job."""

    job_class = Job

    def work(self, *args: Any, **kwargs: Any) -> bool:
        _warm_up()
        return bool(super().work(*args, **kwargs))
