"""The ``[otel]`` table, declared by the otel plugin (``tickwork_add_config``)."""

from __future__ import annotations

from tickwork.config import Flag, Section, Text


class OtelConfig(Section, table="otel"):
    """``[otel]``: present, the node traces every run and records its metrics through OpenTelemetry
    (needs ``tickwork[otel]``); absent, nothing of OpenTelemetry is imported. The exporters are
    chosen by the standard ``OTEL_*`` environment variables."""

    traces = Flag(
        True,
        help="Record a span per run (`tickwork.run <schedule>`), per hand-off publish and per worker task.",
        details="Exported as `OTEL_TRACES_EXPORTER` says (`otlp`, the default, `console`, `none`, or the name of any "
        "installed exporter); `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*` and the others are "
        "read by the OpenTelemetry SDK itself. See [observability.md](observability.md#opentelemetry).",
    )
    metrics = Flag(
        True,
        help="Record the node's metrics (the names and labels of the Prometheus ones) through OpenTelemetry.",
        details="Exported as `OTEL_METRICS_EXPORTER` says, every `OTEL_METRIC_EXPORT_INTERVAL` milliseconds.",
    )
    service_name = Text(
        "tickwork",
        help="The `service.name` exported, unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names one.",
    )
