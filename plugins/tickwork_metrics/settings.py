"""The ``[metrics]`` table, declared by the metrics plugin (``tickwork_add_config``)."""

from __future__ import annotations

from tickwork.config import Integer, Number, Port, Section, Text


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
    schedule_series = Integer(
        0,
        low=0,
        high=100_000,
        help="Most schedules given per-schedule series (last success, consecutive failures, health); `0`: none.",
        details="Opt-in: each schedule adds 8 series. The first this many schedules by name get them; "
        "`tickwork_schedule_series_left_out` says how many did not. The node reads every schedule name and the "
        "recent runs of those kept at most once per `schedule_refresh`, when scraped. See "
        "[observability.md](observability.md#alerting-on-a-schedule).",
    )
    schedule_refresh = Number(
        30.0,
        low=1.0,
        high=3600.0,
        help="Seconds a scrape reuses the per-schedule values read from the store; set it to the scrape interval.",
        details="The health thresholds are those of `[health]`.",
    )
