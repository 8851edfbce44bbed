"""Built-in plugin ``otel``: OpenTelemetry traces and metrics of every run (``[otel]``,
``tickwork[otel]``; docs/observability.md#opentelemetry)."""
