"""Trace context across an executor's boundary (an HTTP request, a queue message), for an observing
plugin (the built-in ``otel`` plugin, docs/observability.md#opentelemetry).

Executors ask here; a plugin that traces runs answers. With no tracer installed for the run's node
(no ``[otel]`` table, or the plugin not installed), each question is one dict lookup, imports
nothing and returns nothing: an executor calls them on every run.

* node side: :func:`publishing` wraps the publish of a hand-off (a span, and the headers that carry
  its context to the worker), :func:`trace_headers` gives the run's context for an outgoing request
  (the ``http`` executor's ``traceparent``), :func:`handed_off` tells how a hand-off ended;
* worker side: :func:`task_span` wraps a worker's execution of a handed-off run, in the trace the
  message's headers carry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from ..structures import JobCall
from .runcontext import RunContext

__all__ = [
    "RunTracer",
    "TaskTracer",
    "handed_off",
    "install",
    "install_task_tracer",
    "publishing",
    "task_span",
    "trace_headers",
    "uninstall",
]

#: Reads one header of an incoming message (``None``: absent).
HeaderLookup = Callable[[str], object]


class RunTracer(Protocol):
    """What a tracing plugin provides for the runs of one node."""

    def headers(self, call: JobCall) -> dict[str, str]:
        """The headers carrying the context of ``call``'s run (``traceparent``, ...)."""

    def publishing(self, call: JobCall, system: str) -> AbstractContextManager[dict[str, str]]:
        """A span around the publish of ``call``'s message to ``system`` (``celery``, ...), a
        child of the run's; entered, it gives the headers carrying its context. An exception
        leaving the block marks it failed."""

    def handed_off(self, call: JobCall, system: str, status: str) -> None:
        """The hand-off of ``call`` ended ``status`` (``submitted``, ``failed``, ``skipped``)."""


class TaskTracer(Protocol):
    """What a tracing plugin provides for a worker process of a hand-off executor."""

    def task(self, context: RunContext, lookup: HeaderLookup, system: str) -> AbstractContextManager[object]:
        """A span around the worker's execution of the run ``context`` names, in the trace the
        message's headers (read through ``lookup``) carry. An exception leaving the block marks
        it failed."""


_lock = threading.Lock()
_run_tracers: dict[str, RunTracer] = {}
_task_tracer: list[TaskTracer] = []
_NO_HEADERS: AbstractContextManager[dict[str, str]] = nullcontext({})
_NO_SPAN: AbstractContextManager[object] = nullcontext()


def install(node_id: str, tracer: RunTracer) -> None:
    """Trace the runs of node ``node_id`` with ``tracer`` (until :func:`uninstall`)."""
    with _lock:
        _run_tracers[node_id] = tracer


def uninstall(node_id: str) -> None:
    with _lock:
        _run_tracers.pop(node_id, None)


def install_task_tracer(tracer: TaskTracer | None) -> None:
    """Trace this process's worker-side executions with ``tracer`` (``None``: no longer)."""
    with _lock:
        _task_tracer[:] = [] if tracer is None else [tracer]


def trace_headers(call: JobCall) -> dict[str, str]:
    """The headers carrying ``call``'s run context; empty when its node traces nothing."""
    tracer = _run_tracers.get(call.node_id)
    return {} if tracer is None else tracer.headers(call)


def publishing(call: JobCall, system: str) -> AbstractContextManager[dict[str, str]]:
    """See :meth:`RunTracer.publishing`; gives no headers when the node traces nothing."""
    tracer = _run_tracers.get(call.node_id)
    return _NO_HEADERS if tracer is None else tracer.publishing(call, system)


def handed_off(call: JobCall, system: str, status: str) -> None:
    tracer = _run_tracers.get(call.node_id)
    if tracer is not None:
        tracer.handed_off(call, system, status)


def task_span(context: RunContext, lookup: HeaderLookup, system: str) -> AbstractContextManager[object]:
    """See :meth:`TaskTracer.task`; does nothing when this process traces nothing."""
    found = _task_tracer
    return _NO_SPAN if not found else found[0].task(context, lookup, system)
