"""The OpenTelemetry SDK of a process, set up from the standard ``OTEL_*`` environment variables.

An application that set its own tracer or meter provider (an embedding app, ``opentelemetry-instrument``)
keeps it: tickwork records through it. Otherwise the SDK's providers are made once per process and
made global (so that other instrumentations of the process, Celery's among them, join the same
traces), with the exporters ``OTEL_TRACES_EXPORTER`` and ``OTEL_METRICS_EXPORTER`` name, found by
the entry points every exporter package registers (``opentelemetry_traces_exporter``, ...), as the
SDK's own auto-configuration finds them. What each exporter, the sampler and the batch processor
read from the environment (endpoint, headers, ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``, ...) they
read themselves.
"""

from __future__ import annotations

import os
import threading
from importlib.metadata import entry_points
from typing import Literal

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from tickwork.errors import ConfigError

Signal = Literal["traces", "metrics"]

#: OTLP's protocols and the exporter each one is registered as. The specification's default
#: protocol is http/protobuf (the SDK's auto-configuration still picks gRPC, which tickwork[otel]
#: does not install).
_OTLP = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}

_lock = threading.Lock()


def exporter_names(signal: Signal) -> list[str]:
    """The exporters ``OTEL_<SIGNAL>_EXPORTER`` names (default ``otlp``; ``none``: none), ``otlp``
    resolved by ``OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`` / ``OTEL_EXPORTER_OTLP_PROTOCOL``.

    :raises ConfigError: for an OTLP protocol without an exporter
    """
    given = os.environ.get(f"OTEL_{signal.upper()}_EXPORTER", "otlp").strip()
    names = [name.strip() for name in given.split(",") if name.strip()]
    if [n.lower() for n in names] in ([], ["none"]):
        return []
    resolved = []
    for name in names:
        if name == "otlp":
            protocol = (
                os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf"
            ).strip()
            if protocol not in _OTLP:
                raise ConfigError(
                    f"OTEL_EXPORTER_OTLP_PROTOCOL: {protocol!r} is not supported (use one of {', '.join(_OTLP)})"
                )
            name = _OTLP[protocol]
        resolved.append(name)
    return resolved


def exporter_classes(signal: Signal) -> list[type]:
    """The exporter classes :func:`exporter_names` names, from their packages' entry points.

    :raises ConfigError: naming an exporter no installed package provides, and those that are
    """
    group = f"opentelemetry_{signal}_exporter"
    found = {ep.name: ep for ep in entry_points(group=group)}
    classes = []
    for name in exporter_names(signal):
        if name not in found:
            hint = " (pip install opentelemetry-exporter-otlp-proto-grpc)" if name == _OTLP["grpc"] else ""
            raise ConfigError(
                f"OTEL_{signal.upper()}_EXPORTER: no exporter {name!r} is installed{hint}; "
                f"installed: {', '.join(sorted(found)) or 'none'}"
            )
        classes.append(found[name].load())
    return classes


def _resource(service_name: str) -> Resource:
    """The resource of what is exported: ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` (read
    by ``Resource.create``), with ``service_name`` when neither names the service."""
    from_env = Resource.create()
    given = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "").replace(" ", "")
    if os.environ.get("OTEL_SERVICE_NAME") or given.startswith("service.name=") or ",service.name=" in given:
        return from_env
    return from_env.merge(Resource({SERVICE_NAME: service_name}))


def tracer_provider(service_name: str) -> trace.TracerProvider:
    """The process's tracer provider: the application's, or the SDK's made from the environment."""
    with _lock:
        current = trace.get_tracer_provider()
        if not isinstance(current, trace.ProxyTracerProvider):
            return current
        provider = TracerProvider(resource=_resource(service_name))
        for exporter in exporter_classes("traces"):
            if not issubclass(exporter, SpanExporter):
                raise ConfigError(f"OTEL_TRACES_EXPORTER: {exporter.__name__} is not a span exporter")
            provider.add_span_processor(BatchSpanProcessor(exporter()))
        trace.set_tracer_provider(provider)
        return trace.get_tracer_provider()


def meter_provider(service_name: str) -> metrics.MeterProvider:
    """The process's meter provider: the application's, or the SDK's made from the environment."""
    with _lock:
        current = metrics.get_meter_provider()
        # The API's placeholder before any provider is set has no public class (unlike tracing's
        # ProxyTracerProvider): anything else was set by the application.
        if type(current).__name__ != "_ProxyMeterProvider":
            return current
        readers: list[MetricReader] = []
        for exporter in exporter_classes("metrics"):
            if issubclass(exporter, MetricReader):  # a pull exporter (Prometheus) is a reader itself
                readers.append(exporter())
            elif issubclass(exporter, MetricExporter):
                readers.append(PeriodicExportingMetricReader(exporter()))
            else:
                raise ConfigError(f"OTEL_METRICS_EXPORTER: {exporter.__name__} is not a metric exporter")
        provider = MeterProvider(resource=_resource(service_name), metric_readers=readers)
        metrics.set_meter_provider(provider)
        return metrics.get_meter_provider()


def flush(provider: object, timeout_ms: int = 5000) -> None:
    """Export what is pending (a node stopping): the SDK's providers can, others may not."""
    force = getattr(provider, "force_flush", None)
    if callable(force):
        force(timeout_ms)
