"""What the otel plugin keeps for one node: its run spans and the process's instruments, fed by the
node's lifecycle hooks, and the answers to its executors (:class:`tickwork.plugin.tracing.RunTracer`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from tickwork.structures import Finish, JobCall, SkippedFire

from . import providers
from .instruments import OtelMetrics
from .settings import OtelConfig
from .spans import RunSpans

if TYPE_CHECKING:
    from tickwork.abc import RunningNode

_lock = threading.Lock()
# Made once per process: the nodes of a process share the instruments (see instruments.py).
_metrics: list[OtelMetrics] = []


def process_metrics(service_name: str) -> OtelMetrics:
    with _lock:
        if not _metrics:
            _metrics.append(OtelMetrics(providers.meter_provider(service_name)))
        return _metrics[0]


class NodeTelemetry:
    """The spans (``[otel] traces``) and metrics (``[otel] metrics``) of one node."""

    def __init__(self, node_id: str, node: RunningNode, settings: OtelConfig) -> None:
        self.node_id = node_id
        self._tracer_provider = providers.tracer_provider(settings.service_name) if settings.traces else None
        self.spans = None if self._tracer_provider is None else RunSpans(self._tracer_provider, node_id)
        self.metrics = process_metrics(settings.service_name) if settings.metrics else None
        if self.metrics is not None:
            self.metrics.nodes[node_id] = node

    # -- the engine's events ----------------------------------------------------------------------

    def runs_started(self, runs: Sequence[JobCall]) -> None:
        if self.spans is not None:
            self.spans.started(runs)

    def runs_finished(self, results: Sequence[Finish]) -> None:
        if self.spans is not None:
            self.spans.finished(results)
        if self.metrics is not None:
            self.metrics.runs_finished(results)

    def retries_planned(self, ended: Sequence[Finish]) -> None:
        # Not counted: tickwork_runs counts the attempt that ends a fire, as the Prometheus one.
        if self.spans is not None:
            self.spans.retries_planned(ended)

    def fires_skipped(self, skipped: Sequence[SkippedFire]) -> None:
        if self.spans is not None:
            self.spans.skipped(skipped)
        if self.metrics is not None:
            self.metrics.fires_skipped(skipped)

    def claimed(self, count: int, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.claimed(count, seconds)

    def store_error(self) -> None:
        if self.metrics is not None:
            self.metrics.store_error()

    def membership_changed(self, members: Sequence[str], owned: Sequence[int] | None) -> None:
        if self.metrics is not None:
            self.metrics.membership_changed(members, owned)

    def stop(self) -> None:
        if self.spans is not None:
            self.spans.stop()
            providers.flush(self._tracer_provider)
        if self.metrics is not None:
            self.metrics.nodes.pop(self.node_id, None)

    # -- what the node's executors ask (tickwork.plugin.tracing) ----------------------------------

    def headers(self, call: JobCall) -> dict[str, str]:
        return {} if self.spans is None else self.spans.headers(call)

    def publishing(self, call: JobCall, system: str) -> AbstractContextManager[dict[str, str]]:
        return nullcontext({}) if self.spans is None else self.spans.publishing(call, system)

    def handed_off(self, call: JobCall, system: str, status: str) -> None:
        if self.metrics is not None:
            self.metrics.handed_off(system, status)
