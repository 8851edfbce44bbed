"""OpenTelemetry for the otel plugin's tests: the SDK's in-memory exporter and reader as the
process's providers (as an application embedding a node sets its own), and the spans the SDK's
console exporter printed in a process's output."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass(frozen=True)
class InMemory:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self, name_prefix: str = "") -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith(name_prefix)]

    def points(self, name: str) -> list[Any]:
        """The data points of the metric ``name`` collected now."""
        data = self.metrics.get_metrics_data()
        if data is None:  # nothing recorded yet
            return []
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


_made: list[InMemory] = []


def in_memory() -> InMemory:
    """The process's providers, set once (OpenTelemetry's global providers cannot be replaced):
    every span ends in one in-memory exporter, cleared here for the calling test."""
    if not _made:
        spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
        trace.set_tracer_provider(tracer_provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _made.append(InMemory(spans, reader))
    made = _made[0]
    made.spans.clear()
    return made


def console_spans(text: str) -> list[dict[str, Any]]:
    """The spans the SDK's console exporter printed (one JSON object each, over several lines)
    among the other lines of a process's output."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    position = 0
    while (start := text.find("{\n", position)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            found.append(value)
        position = end
    return found
