"""The metrics of one node, in a registry of its own (two nodes in one process never collide).

No metric here carries a schedule label: a million schedules must not mean a million series. The
opt-in per-schedule series (schedules.py) are bounded by `[metrics] schedule_series`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from tickwork.plugin.runfigures import CLAIM_BUCKETS, LAG_BUCKETS, run_figures
from tickwork.structures import BUCKETS, Finish, SkippedFire

if TYPE_CHECKING:
    from tickwork.abc import RunningNode

#: Schedule counts are one grouped query; scrapes more often than this reuse the last answer.
SCHEDULE_COUNT_MAX_AGE = 10.0


class ScheduleCounts(Collector):
    """``tickwork_schedules{state}``, counted in the store at scrape time (cached briefly)."""

    def __init__(self, count: Callable[[], dict[str, int]]) -> None:
        self._count = count
        self._cached: tuple[float, dict[str, int]] | None = None

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily("tickwork_schedules", "Schedules in the store by state", labels=["state"])

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """What it serves, without querying (registering would otherwise count, and cache, at once)."""
        yield self._family()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = self._family()
        now = time.monotonic()
        if self._cached is None or now - self._cached[0] > SCHEDULE_COUNT_MAX_AGE:
            # The store may be down (/healthz says so): then the last counts stay.
            with contextlib.suppress(Exception):
                self._cached = (now, self._count())
        if self._cached is not None:
            for state, value in sorted(self._cached[1].items()):
                family.add_metric([state], value)
        yield family


class NodeMetrics:
    """The instruments of one node, updated from the lifecycle hooks."""

    def __init__(self, node: RunningNode) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.runs = Counter("tickwork_runs", "Runs ended, by status (skipped fires included)", ["status"], registry=r)
        self.lag = Histogram(
            "tickwork_fire_lag_seconds",
            "Start of a run minus its scheduled time (database clock)",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.duration = Histogram(
            "tickwork_run_duration_seconds", "Run duration from start to end (database clock)", registry=r
        )
        self.claims = Counter("tickwork_claims", "Fires claimed by this node", registry=r)
        self.claim_seconds = Histogram(
            "tickwork_claim_seconds", "Duration of one claim statement", buckets=CLAIM_BUCKETS, registry=r
        )
        self.store_errors = Counter("tickwork_store_errors", "Failed store calls (the engine retried)", registry=r)
        in_flight = Gauge("tickwork_in_flight", "Runs handed to executors and not ended", registry=r)
        in_flight.set_function(lambda: node.in_flight)
        held = Gauge("tickwork_held", "Fires claimed ahead of their time, waiting to start", registry=r)
        held.set_function(lambda: node.held)
        self.members = Gauge("tickwork_ring_members", "Live nodes as this node sees them", registry=r)
        self.owned = Gauge("tickwork_owned_buckets", f"Hash buckets (of {BUCKETS}) this node attempts", registry=r)
        r.register(ScheduleCounts(node.store.schedule_counts))
        # Every status appears from the start (at 0), so rate() and alerts work before the first failure.
        for status in ("succeeded", "failed", "timed_out", "skipped"):
            self.runs.labels(status)

    def runs_finished(self, results: Sequence[Finish]) -> None:
        figures = run_figures(results)
        for lag in figures.lags:
            self.lag.observe(lag)
        for duration in figures.durations:
            self.duration.observe(duration)
        for status, count in figures.by_status.items():
            self.runs.labels(status).inc(count)

    def fires_skipped(self, skipped: Sequence[SkippedFire]) -> None:
        self.runs.labels("skipped").inc(len(skipped))

    def claimed(self, count: int, seconds: float) -> None:
        if count:
            self.claims.inc(count)
        self.claim_seconds.observe(seconds)

    def membership_changed(self, members: Sequence[str], owned: Sequence[int] | None) -> None:
        self.members.set(len(members))
        self.owned.set(BUCKETS if owned is None else len(owned))
