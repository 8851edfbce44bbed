"""The Dramatiq worker-side integration: ``tickwork_dramatiq.worker.install(broker)``.

Call it where the broker is defined, after ``dramatiq.set_broker(broker)``. For a message a
tickwork node sent (its options name the run), the middleware:

* lets the actor run only if the run moves to ``started`` (a message of a run that started or
  ended is skipped: Dramatiq's ``SkipMessage``, acknowledged and not run); a redelivered message
  of a run still ``started`` (its worker died) records the run ``failed`` as lost; the start
  names the worker process, ``host:pid`` (the run's ``worker``);
* runs it with ``tickwork.current_run()`` returning the run's context;
* records ``succeeded`` or ``failed`` (with the traceback).

Other messages run untouched. The worker reads tickwork's database from ``config`` (a path or
dict), else ``$TICKWORK_CONFIG``, else ``./tickwork.toml``.
"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import AbstractContextManager
from typing import Any

import dramatiq
from dramatiq.middleware import Middleware, SkipMessage

from tickwork.plugin import tracing
from tickwork.plugin.runcontext import RunContext, running
from tickwork.plugin.tracebacks import format_exception
from tickwork_handoff import identity
from tickwork_handoff.reporter import ConfigSource, ProcessReporter

from .executor import OPTION


class TickworkMiddleware(Middleware):
    """Reports tickwork's messages (see the module's doc)."""

    def __init__(self, config: ConfigSource = None, *, wait_for_node: float = 30.0) -> None:
        self.reporter = ProcessReporter(config, wait_for_node=wait_for_node)
        # The run each worker thread is processing, and the context manager that made it current.
        self._local = threading.local()

    def before_worker_boot(self, broker: dramatiq.Broker, worker: Any) -> None:
        self.reporter.get()  # connect before the first message, not while it waits

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        context = identity.context_of(message.options.get(OPTION))
        self._local.current = None
        if context is None:
            return
        if not self.reporter.get().begin(context, redelivered=_redelivered(message), worker=worker_name()):
            raise SkipMessage(f"run {context.run_id} of {context.schedule} already started or ended")
        scope = running(context)
        scope.__enter__()
        # A span in the trace of the node's publish when this worker traces (an [otel] table).
        span = tracing.task_span(context, message.options[OPTION].get, "dramatiq")
        span.__enter__()
        self._local.current = (context, scope, span)

    def after_process_message(
        self, broker: dramatiq.Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        current: tuple[RunContext, running, AbstractContextManager[object]] | None = getattr(
            self._local, "current", None
        )
        if current is None:
            return
        self._local.current = None
        context, scope, span = current
        span.__exit__(type(exception) if exception is not None else None, exception, None)
        scope.__exit__(None, None, None)
        reporter = self.reporter.get()
        if exception is None:
            reporter.succeeded(context)
        else:
            reporter.failed(context, format_exception(exception))


def worker_name() -> str:
    """This worker process as the history names it: ``host:pid``. Dramatiq gives its workers no
    name of their own, and one ``dramatiq`` command forks several worker processes: the host
    and the process id tell them apart (the pid is read per message: a fork has its own)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _redelivered(message: Any) -> bool:
    """Whether this delivery of a tickwork message is the broker's redelivery. RabbitMQ says so
    (``redelivered``: the consumer that held it unacknowledged went away). Dramatiq's Redis broker
    has no such flag; there the only second delivery of a tickwork message is the broker's
    requeue of a dead worker's unacknowledged messages (after ``heartbeat_timeout``), since
    tickwork sends its messages with ``max_retries = 0``, so every delivery is taken as possibly
    a redelivery: it only matters when the run was already ``started`` by an earlier one."""
    flag = getattr(message, "redelivered", None)
    return True if flag is None else bool(flag)


def install(broker: dramatiq.Broker, config: ConfigSource = None, *, wait_for_node: float = 30.0) -> None:
    """Add :class:`TickworkMiddleware` to ``broker``.

    :param wait_for_node: seconds a message waits for the node to record its hand-off
    """
    broker.add_middleware(TickworkMiddleware(config, wait_for_node=wait_for_node))


__all__ = ["TickworkMiddleware", "install", "worker_name"]
