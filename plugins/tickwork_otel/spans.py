"""The spans of one node's runs: ``tickwork.run <schedule>`` from a run's start to its end, the
publish span of a hand-off under it, and the trace context an executor sends on.

A run's span starts when the engine reports the run started, or earlier when its executor asks
for its context first (an executor thread may publish before the engine's thread reports the
batch). Its end comes with the run's end (written in batches): the span then ends at its start
plus the run's duration on the database clock, so its length is the one the history records.

* a failed or timed-out run: status error, the exception recorded (the job's own when it raised
  in this process, else an ``exception`` event with the recorded error);
* a failed attempt that will be retried: the same, and a ``tickwork.retry`` event; the retry's
  span is a child of it (one trace per fire, whatever its attempts);
* a skipped fire: a ``tickwork.skip`` event with the reason, on the run's span when the run was
  started (a hand-off skipped because the previous one is still running), else on a span of no
  duration of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from tickwork.structures import Finish, JobCall, RunStatus, SkippedFire, iso_z

_ERRORS = frozenset({RunStatus.FAILED, RunStatus.TIMED_OUT})


@dataclass
class OpenSpan:
    span: Span
    #: Wall clock at its start (ns since the epoch): its end is this plus the run's duration.
    start_ns: int
    call: JobCall


def run_attributes(call: JobCall) -> dict[str, str | int | float]:
    return {
        "tickwork.schedule": call.schedule,
        "tickwork.scheduled_for": iso_z(call.scheduled_for),
        "tickwork.attempt": call.attempt,
        "tickwork.run_id": call.run_id,
        "tickwork.node": call.node_id,
    }


def _lag_ms(started: datetime, scheduled_for: datetime) -> float:
    return round((started - scheduled_for).total_seconds() * 1000.0, 3)


class RunSpans:
    """The open run spans of one node, by run id (runs in flight, and their retries' parents)."""

    def __init__(self, tracer_provider: trace.TracerProvider, node_id: str) -> None:
        self._tracer = tracer_provider.get_tracer("tickwork")
        self._node_id = node_id
        self._lock = threading.Lock()
        self._open: dict[int, OpenSpan] = {}
        #: (schedule, scheduled_for) -> run id of its open span, for skips (which name no run).
        self._by_fire: dict[tuple[str, datetime], int] = {}
        #: (schedule, scheduled_for) -> the span context of its last failed attempt, until the retry starts.
        self._retried: dict[tuple[str, datetime], trace.SpanContext] = {}

    # -- starts -----------------------------------------------------------------------------------

    def _open_span(self, call: JobCall) -> OpenSpan:
        """The open span of ``call``'s run, started now if it is not yet (called under the lock)."""
        found = self._open.get(call.run_id)
        if found is not None:
            return found
        fire = (call.schedule, call.scheduled_for)
        parent = self._retried.pop(fire, None)
        start_ns = time.time_ns()
        attributes = run_attributes(call)
        # This host's clock until the run's end gives the database clock's (see _end).
        attributes["tickwork.lag_ms"] = round(start_ns / 1e6 - call.scheduled_for.timestamp() * 1000.0, 3)
        # A fire is a trace of its own (whatever context the calling thread has); a retry is a
        # child of the attempt it follows.
        context = otel_context.Context()
        if parent is not None:
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent), context)
        span = self._tracer.start_span(
            f"tickwork.run {call.schedule}",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_ns,
        )
        opened = self._open[call.run_id] = OpenSpan(span, start_ns, call)
        self._by_fire[fire] = call.run_id
        return opened

    def started(self, runs: Sequence[JobCall]) -> None:
        with self._lock:
            for call in runs:
                self._open_span(call)

    # -- ends -------------------------------------------------------------------------------------

    def _close(self, run_id: int | None) -> OpenSpan | None:
        if run_id is None:
            return None
        opened = self._open.pop(run_id, None)
        if opened is not None:
            fire = (opened.call.schedule, opened.call.scheduled_for)
            if self._by_fire.get(fire) == run_id:
                del self._by_fire[fire]
        return opened

    def finished(self, results: Sequence[Finish]) -> None:
        with self._lock:
            for result in results:
                opened = self._close(result.claim.run_id)
                if opened is not None:
                    self._end(opened, result)

    def retries_planned(self, ended: Sequence[Finish]) -> None:
        with self._lock:
            for result in ended:
                opened = self._close(result.claim.run_id)
                if opened is None:
                    continue
                attributes: dict[str, str | int] = {"tickwork.attempt": result.claim.attempt + 1}
                if result.next_fire is not None:
                    attributes["tickwork.retry_at"] = iso_z(result.next_fire)
                opened.span.add_event("tickwork.retry", attributes)
                self._end(opened, result)
                self._retried[(opened.call.schedule, opened.call.scheduled_for)] = opened.span.get_span_context()

    def _end(self, opened: OpenSpan, result: Finish) -> None:
        span, outcome = opened.span, result.outcome
        attributes: dict[str, str | float] = {
            "tickwork.executor": result.claim.spec.executor,
            "tickwork.status": outcome.status.value,
        }
        if result.started_at is not None:
            # The database clock's lag, as the history and the Prometheus histogram have it.
            attributes["tickwork.lag_ms"] = _lag_ms(result.started_at, result.claim.scheduled_for)
        span.set_attributes(attributes)
        if outcome.status in _ERRORS:
            if outcome.exception is not None:
                span.record_exception(outcome.exception)
            elif outcome.error:
                # Raised elsewhere (a worker, an HTTP endpoint): its recorded text is all there is.
                event = {"exception.type": outcome.status.value, "exception.message": outcome.error}
                span.add_event("exception", event)
            span.set_status(Status(StatusCode.ERROR, (outcome.error or outcome.status.value).split("\n", 1)[0]))
        end_ns = time.time_ns()
        if result.started_at is not None and result.finished_at is not None:
            took = (result.finished_at - result.started_at).total_seconds()
            if took >= 0:
                end_ns = min(end_ns, opened.start_ns + int(took * 1e9))
        span.end(end_time=max(end_ns, opened.start_ns))

    def skipped(self, fires: Sequence[SkippedFire]) -> None:
        with self._lock:
            for fire in fires:
                opened = self._close(self._by_fire.get((fire.schedule, fire.scheduled_for)))
                self._retried.pop((fire.schedule, fire.scheduled_for), None)
                if opened is None:
                    span = self._tracer.start_span(
                        f"tickwork.run {fire.schedule}",
                        context=otel_context.Context(),
                        attributes={
                            "tickwork.schedule": fire.schedule,
                            "tickwork.scheduled_for": iso_z(fire.scheduled_for),
                            "tickwork.node": self._node_id,
                        },
                    )
                else:
                    span = opened.span
                span.add_event("tickwork.skip", {"tickwork.reason": fire.reason})
                span.set_attribute("tickwork.status", RunStatus.SKIPPED.value)
                span.end()

    def stop(self) -> None:
        """End what is still open (a node stopping with runs it did not see end)."""
        with self._lock:
            for opened in self._open.values():
                opened.span.add_event("tickwork.node_stopped")
                opened.span.end()
            self._open.clear()
            self._by_fire.clear()
            self._retried.clear()

    # -- what executors ask (tickwork.plugin.tracing.RunTracer) -----------------------------------

    def _context_of(self, call: JobCall) -> otel_context.Context:
        with self._lock:
            span = self._open_span(call).span
        return trace.set_span_in_context(span, otel_context.Context())

    def headers(self, call: JobCall) -> dict[str, str]:
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=self._context_of(call))
        return carrier

    @contextmanager
    def publishing(self, call: JobCall, system: str) -> Iterator[dict[str, str]]:
        attributes = run_attributes(call)
        attributes.update({"messaging.system": system, "messaging.operation.type": "send"})
        span = self._tracer.start_span(
            f"tickwork.publish {call.schedule}", context=self._context_of(call), kind=SpanKind.PRODUCER,
            attributes=attributes,
        )  # fmt: skip
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span, otel_context.Context()))
        try:
            yield carrier
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
        finally:
            span.end()
