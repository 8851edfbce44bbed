"""Which exporters the ``OTEL_*_EXPORTER`` variables name, found through the entry points the
exporter packages register (the SDK's own and tickwork[otel]'s OTLP/HTTP one)."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from tickwork.errors import ConfigError
from tickwork_otel.providers import exporter_classes, exporter_names

VARIABLES = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_otlp_over_http_by_default_as_the_specification_says() -> None:
    assert exporter_names("traces") == ["otlp_proto_http"]
    assert exporter_classes("traces") == [OTLPSpanExporter]
    assert exporter_classes("metrics") == [OTLPMetricExporter]


def test_the_variables_choose_the_exporters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console, otlp")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    assert exporter_classes("traces") == [ConsoleSpanExporter, OTLPSpanExporter]
    assert exporter_names("metrics") == []
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "console")
    assert exporter_classes("metrics") == [ConsoleMetricExporter]


def test_the_otlp_protocol_picks_the_otlp_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf")
    assert exporter_names("traces") == ["otlp_proto_grpc"]
    assert exporter_names("metrics") == ["otlp_proto_http"]
    # The gRPC exporter is not part of tickwork[otel]: the error says what to install.
    with pytest.raises(ConfigError, match=r"no exporter 'otlp_proto_grpc' is installed.*exporter-otlp-proto-grpc"):
        exporter_classes("traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
    with pytest.raises(ConfigError, match="'carrier-pigeon' is not supported"):
        exporter_names("traces")


def test_an_unknown_exporter_is_named_with_the_installed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    named = r"OTEL_TRACES_EXPORTER: no exporter 'zipkin'.*installed: console, otlp_proto_http"
    with pytest.raises(ConfigError, match=named):
        exporter_classes("traces")


def test_the_buckets_are_the_prometheus_plugin_s() -> None:
    from prometheus_client import Histogram

    from tickwork_metrics import instruments as prometheus
    from tickwork_otel import instruments

    assert instruments.LAG_BUCKETS == prometheus.LAG_BUCKETS
    assert instruments.CLAIM_BUCKETS == prometheus.CLAIM_BUCKETS
    assert (*instruments.DURATION_BUCKETS, float("inf")) == Histogram.DEFAULT_BUCKETS
