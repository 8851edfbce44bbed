"""Per-schedule series for alerting (opt-in, bounded by ``[metrics] schedule_series``):

* ``tickwork_schedule_last_success_timestamp_seconds{schedule}``: when its latest successful
  run finished (absent before the first one), for the dead-man's switch
  ``time() - tickwork_schedule_last_success_timestamp_seconds > X``
* ``tickwork_schedule_consecutive_failures{schedule}``
* ``tickwork_schedule_health{schedule,state}``: 1 for its health state, 0 for the others
* ``tickwork_schedule_series_left_out``: schedules beyond the bound, without series

Values come from one node-local cache, read from the store at most once per
``schedule_refresh`` seconds, when scraped: N nodes scraped every interval read the store N
times per interval, whatever the number of scrapes.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from tickwork.abc import Store
from tickwork.admin.health import Health, HealthPolicy, ScheduleHealth, health_of


@dataclass(frozen=True)
class Snapshot:
    health: dict[str, ScheduleHealth]
    left_out: int


class ScheduleSeries(Collector):
    """The per-schedule families, from a cache refreshed at scrape time."""

    def __init__(
        self,
        store: Callable[[], Store],
        limit: int,
        refresh: float,
        policy: HealthPolicy,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._limit = limit
        self._refresh = refresh
        self._policy = policy
        self._clock = clock
        self._lock = threading.Lock()  # two scrapes at once read the store once
        self._cached: tuple[float, Snapshot] | None = None

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, ...]:
        return (
            GaugeMetricFamily(
                "tickwork_schedule_last_success_timestamp_seconds",
                "When the schedule's latest successful run finished (Unix time, database clock)",
                labels=["schedule"],
            ),
            GaugeMetricFamily(
                "tickwork_schedule_consecutive_failures",
                "Failed or timed-out runs of the schedule since its latest success",
                labels=["schedule"],
            ),
            GaugeMetricFamily(
                "tickwork_schedule_health",
                "1 for the schedule's health state (healthy, late, failing, overdue, paused, parked), 0 for the others",
                labels=["schedule", "state"],
            ),
            GaugeMetricFamily(
                "tickwork_schedule_series_left_out",
                "Schedules without per-schedule series ([metrics] schedule_series bounds them)",
            ),
        )

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield from self._families()

    def snapshot(self) -> Snapshot | None:
        """The cached values, read again when older than the refresh period (the last ones stay
        while the store does not answer: /healthz says so)."""
        with self._lock:
            now = self._clock()
            if self._cached is None or now - self._cached[0] >= self._refresh:
                with contextlib.suppress(Exception):
                    self._cached = (now, self._read())
            return None if self._cached is None else self._cached[1]

    def _read(self) -> Snapshot:
        store = self._store()
        # By name: the same schedules keep their series from one read to the next, where the
        # next-fire order would swap them in and out as they fire.
        every = sorted(store.list_schedules(), key=lambda s: s.name)
        kept = every[: self._limit]
        health = health_of(store, kept, self._policy)
        return Snapshot({s.name: health[s.id] for s in kept}, len(every) - len(kept))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        last, failures, states, left_out = self._families()
        snap = self.snapshot()
        if snap is not None:
            for name, health in snap.health.items():
                if health.last_success is not None:
                    last.add_metric([name], health.last_success.timestamp())
                failures.add_metric([name], health.consecutive_failures)
                for state in Health:
                    states.add_metric([name, state.value], 1.0 if health.state is state else 0.0)
            left_out.add_metric([], snap.left_out)
        yield from (last, failures, states, left_out)
