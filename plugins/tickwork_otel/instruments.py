"""The metrics of the nodes of a process through OpenTelemetry, under the names and labels
(attributes) of the Prometheus ones (plugins/tickwork_metrics/instruments.py): a dashboard or alert
written for one reads the other. An OpenTelemetry counter ``tickwork_runs`` is what Prometheus calls
``tickwork_runs_total`` once a collector exports it there, as prometheus_client names it too. As
with Prometheus, no series carries a node label: the exporting process (its resource, e.g.
``service.instance.id``) tells the nodes apart; two nodes of one process add up.

Beside those, ``tickwork_handoffs{executor,status}`` counts how this process's hand-offs ended
(``submitted``, ``failed``, ``skipped``): Prometheus has no such counter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from tickwork.plugin.runfigures import CLAIM_BUCKETS, LAG_BUCKETS, run_figures
from tickwork.structures import BUCKETS, Finish, SkippedFire

if TYPE_CHECKING:
    from tickwork.abc import RunningNode

#: Run durations: prometheus_client's default buckets, which tickwork_run_duration_seconds uses.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


class OtelMetrics:
    """The instruments of a process (made once: an instrument made twice would be observed
    twice), updated from the lifecycle hooks of each node."""

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter("tickwork")
        #: The running nodes, by id, whose gauges are observed.
        self.nodes: dict[str, RunningNode] = {}
        self.runs = meter.create_counter("tickwork_runs", description="Runs ended, by status (skipped fires included)")
        self.lag = meter.create_histogram(
            "tickwork_fire_lag_seconds",
            unit="s",
            description="Start of a run minus its scheduled time (database clock)",
            explicit_bucket_boundaries_advisory=list(LAG_BUCKETS),
        )
        self.duration = meter.create_histogram(
            "tickwork_run_duration_seconds",
            unit="s",
            description="Run duration from start to end (database clock)",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.claims = meter.create_counter("tickwork_claims", description="Fires claimed by this node")
        self.claim_seconds = meter.create_histogram(
            "tickwork_claim_seconds",
            unit="s",
            description="Duration of one claim statement",
            explicit_bucket_boundaries_advisory=list(CLAIM_BUCKETS),
        )
        self.store_errors = meter.create_counter(
            "tickwork_store_errors", description="Failed store calls (the engine retried)"
        )
        self.handoffs = meter.create_counter(
            "tickwork_handoffs", description="Hand-offs of this node ended, by executor and status"
        )
        self.members = meter.create_gauge("tickwork_ring_members", description="Live nodes as this node sees them")
        self.owned = meter.create_gauge(
            "tickwork_owned_buckets", description=f"Hash buckets (of {BUCKETS}) this node attempts"
        )

        def in_flight(_: CallbackOptions) -> Iterable[Observation]:
            yield Observation(sum(node.in_flight for node in list(self.nodes.values())))

        def held(_: CallbackOptions) -> Iterable[Observation]:
            yield Observation(sum(node.held for node in list(self.nodes.values())))

        meter.create_observable_gauge(
            "tickwork_in_flight", [in_flight], description="Runs handed to executors and not ended"
        )
        meter.create_observable_gauge(
            "tickwork_held", [held], description="Fires claimed ahead of their time, waiting to start"
        )

    def runs_finished(self, results: Sequence[Finish]) -> None:
        figures = run_figures(results)
        for lag in figures.lags:
            self.lag.record(lag)
        for duration in figures.durations:
            self.duration.record(duration)
        for status, count in figures.by_status.items():
            self.runs.add(count, {"status": status})

    def fires_skipped(self, skipped: Sequence[SkippedFire]) -> None:
        self.runs.add(len(skipped), {"status": "skipped"})

    def claimed(self, count: int, seconds: float) -> None:
        if count:
            self.claims.add(count)
        self.claim_seconds.record(seconds)

    def store_error(self) -> None:
        self.store_errors.add(1)

    def handed_off(self, executor: str, status: str) -> None:
        self.handoffs.add(1, {"executor": executor, "status": status})

    def membership_changed(self, members: Sequence[str], owned: Sequence[int] | None) -> None:
        self.members.set(len(members))
        self.owned.set(BUCKETS if owned is None else len(owned))
