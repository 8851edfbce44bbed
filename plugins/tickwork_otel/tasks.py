"""The worker-side spans of handed-off runs (see :mod:`.worker`, which makes them on demand)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind

from tickwork.plugin.runcontext import RunContext
from tickwork.plugin.tracing import HeaderLookup
from tickwork.structures import iso_z


class TaskSpans:
    """A span ``tickwork.task <schedule>`` per execution (:class:`tickwork.plugin.tracing.TaskTracer`)."""

    def __init__(self, provider: trace.TracerProvider) -> None:
        self._tracer = provider.get_tracer("tickwork")

    @contextmanager
    def task(self, context: RunContext, lookup: HeaderLookup, system: str) -> Iterator[Span]:
        # The headers the configured propagators read (W3C traceparent and tracestate, baggage).
        carrier: dict[str, str] = {}
        for name in propagate.get_global_textmap().fields:
            value = lookup(name)
            if value is not None:
                carrier[name] = str(value)
        attributes: dict[str, str | int] = {
            "tickwork.schedule": context.schedule,
            "tickwork.scheduled_for": iso_z(context.scheduled_for),
            "tickwork.attempt": context.attempt,
            "tickwork.run_id": context.run_id,
            "tickwork.node": context.node_id,
            "messaging.system": system,
            "messaging.operation.type": "process",
        }
        # Current while the task runs: what the task itself traces nests under it. An exception
        # leaving the task is recorded and sets the status to error.
        with self._tracer.start_as_current_span(
            f"tickwork.task {context.schedule}",
            context=propagate.extract(carrier),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
        ) as span:
            yield span
