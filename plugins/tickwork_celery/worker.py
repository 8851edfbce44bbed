"""The Celery worker-side integration: ``tickwork_celery.worker.install(app)``.

Call it where the application is defined (``app = Celery(...)``; ``install(app)``). Every task
of the app then, for a message a tickwork node sent (its headers name the run):

* runs only if the run moves to ``started`` (a redelivered message of a run that started or
  ended is refused, acknowledged and not run: Celery's ``Ignore``), the start naming the worker
  (its node name, ``celery@host``: the run's ``worker`` in the history);
* runs with ``tickwork.current_run()`` returning the run's context;
* records ``succeeded``, ``failed`` (with the traceback; also when its pool child was lost or hit
  the hard time limit) or, on ``self.retry()``, ``submitted`` again with the reason.

Messages not sent by tickwork run untouched. The worker reads tickwork's database from
``config`` (a path or dict), else ``$TICKWORK_CONFIG``, else ``./tickwork.toml``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from celery import Celery, Task, signals
from celery.exceptions import Ignore, Retry, TimeLimitExceeded, WorkerLostError

from tickwork.plugin import tracing
from tickwork.plugin.runcontext import RunContext, running
from tickwork.plugin.tracebacks import format_exception
from tickwork_handoff import identity
from tickwork_handoff.reporter import ConfigSource, ProcessReporter

log = logging.getLogger("tickwork.celery")

_NAMES = (identity.SCHEDULE, identity.SCHEDULED_FOR, identity.ATTEMPT, identity.RUN_ID, identity.NODE)


def install(app: Celery, config: ConfigSource = None, *, wait_for_node: float = 30.0) -> None:
    """Make every task of ``app`` report to tickwork (see the module's doc).

    :param wait_for_node: seconds a task waits for the node to record its hand-off
    """
    reporter = ProcessReporter(config, wait_for_node=wait_for_node)

    def wrap_all(**_: Any) -> None:
        for task in list(app.tasks.values()):
            _wrap(task, reporter)

    # Tasks are bound when the app is finalized, before the worker builds its tracers (which
    # call task.run): wrapping then covers every task, wherever it was defined.
    app.on_after_finalize.connect(wrap_all, weak=False)
    if app.finalized:
        wrap_all()

    def warm_up(**_: Any) -> None:
        # Connect before the first message, not while it waits (a pool child connects itself).
        try:
            reporter.get()
        except Exception:
            log.exception("tickwork: cannot open tickwork's store; tasks sent by tickwork will fail to start")

    signals.worker_ready.connect(warm_up, weak=False)
    signals.worker_process_init.connect(warm_up, weak=False)

    def lost(sender: Task | None = None, exception: BaseException | None = None, **_: Any) -> None:
        # A pool child killed mid-task, or past its hard time limit, never returns to the
        # wrapper: the worker's main process reports it (with the request of that task).
        if sender is None or not isinstance(exception, WorkerLostError | TimeLimitExceeded):
            return
        context = identity.context_of(_headers(sender.request))
        if context is not None:
            reporter.get().failed(context, f"{type(exception).__name__}: {exception}")

    signals.task_failure.connect(lost, weak=False)


def _headers(request: Any) -> Mapping[str, Any]:
    # Protocol 2 puts custom headers on the request itself; some versions keep them in .headers.
    found = {name: getattr(request, name) for name in _NAMES if getattr(request, name, None) is not None}
    extra = getattr(request, "headers", None) or {}
    return {**{k: v for k, v in extra.items() if k in _NAMES}, **found}


def _header(request: Any, name: str) -> object:
    """One header of the message (a trace context's ``traceparent``, ...), wherever the protocol put it."""
    found = getattr(request, name, None)
    return found if found is not None else (getattr(request, "headers", None) or {}).get(name)


def _wrap(task: Task, reporter: ProcessReporter) -> None:
    if getattr(task, "_tickwork_wrapped", False):
        return
    original: Callable[..., Any] = task.run

    @functools.wraps(original)
    def run(*args: Any, **kwargs: Any) -> Any:
        request = task.request
        context = identity.context_of(_headers(request))
        if context is None:
            return original(*args, **kwargs)
        return _run_reported(context, request, reporter, original, args, kwargs)

    task.run = run
    task._tickwork_wrapped = True


def _run_reported(
    context: RunContext,
    request: Any,
    reporter: ProcessReporter,
    original: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    rep = reporter.get()
    delivery = getattr(request, "delivery_info", None) or {}
    if not rep.begin(
        context,
        retry=bool(request.retries),
        redelivered=bool(delivery.get("redelivered")),
        # The worker's node name (`celery@host`, or what its -n says): the one `celery inspect` shows.
        worker=getattr(request, "hostname", None) or None,
    ):
        raise Ignore()
    try:
        # A span in the trace of the node's publish when this worker traces (an [otel] table).
        with running(context), tracing.task_span(context, functools.partial(_header, request), "celery"):
            result = original(*args, **kwargs)
    except Retry as exc:
        rep.retrying(context, str(exc.message or exc.exc or exc))
        raise
    except Ignore:
        rep.succeeded(context)
        raise
    except BaseException as exc:
        rep.failed(context, format_exception(exc))
        raise
    rep.succeeded(context)
    return result
