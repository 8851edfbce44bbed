"""The ``[metrics]`` table, declared by the metrics plugin (``tickwork_add_config``)."""

from __future__ import annotations

from tickwork.config import Port, Section, Text


class MetricsConfig(Section, table="metrics"):
    """``[metrics]``: present, the node serves Prometheus metrics and ``/healthz``; absent, no server."""

    port = Port(
        9464,
        help="TCP port of `/metrics` and `/healthz`.",
        details="`0` picks a free port (logged at start). A port in use fails the node's start with "
        "`metrics.port: cannot listen on ...`.",
    )
    host = Text(
        "127.0.0.1",
        help="Address to listen on.",
        details='Use `"0.0.0.0"` in a container so that Prometheus and the kubelet\'s probes reach it.',
    )
