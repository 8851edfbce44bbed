"""The health sweep behind ``tickwork_health_changed``: one live node notices when a schedule
changes health state and tells the plugins, once per change across the cluster.

Who sweeps: the live node with the lowest id, as each node's membership sees the live nodes. No
table records what was reported (the schema stays as it is), so the sweeping node keeps the
last states in memory: its first sweep after it took the role only records them. A change that
happens while the role moves (the sweeper stopped or died) is therefore not reported, and none
is reported twice; a short split view of the live nodes (two nodes each believing they are the
lowest for a heartbeat or two) can at worst report a change from both. See
docs/observability.md#health-changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..admin.health import HealthPolicy, health_of
from ..admin.healthreads import HEALTH_BATCH
from ..structures import Health, HealthChange

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger("tickwork.health")


class HealthWatch:
    """Sweeps every schedule's health every ``[health] watch_interval`` seconds from a thread of
    its own, while this node is the sweeper, and reports the changes through ``report``."""

    def __init__(self, node: Node, report: Callable[[Sequence[HealthChange]], None]) -> None:
        self._node = node
        self._report = report
        self._interval = node.config.health.watch_interval
        self._policy = HealthPolicy.of(node.config)
        self._last: dict[str, Health] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"tickwork-health-{node.node_id}", daemon=True)

    @classmethod
    def reporting_to_hooks(cls, node: Node) -> HealthWatch:
        """A started watch of ``node`` that reports to its plugins' ``tickwork_health_changed``."""

        def report(changes: Sequence[HealthChange]) -> None:
            node.hooks.call("tickwork_health_changed", node_id=node.node_id, changes=changes)

        watch = cls(node, report)
        watch.start()
        return watch

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=max(5.0, self._interval))

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.sweep()
            except Exception as exc:  # the store may be down: the next sweep tries again
                log.warning("health sweep failed: %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)

    def sweep(self) -> list[HealthChange]:
        """One sweep: the changes since the previous one (reported), or nothing when another
        node sweeps or this is the first sweep since this node took the role."""
        node = self._node
        members = node.members()
        if not members or min(members) != node.node_id:
            self._last = None  # when the role comes back, start from a fresh baseline
            return []
        store = node.store
        schedules = store.find_schedules()
        now = store.now()
        current: dict[str, Health] = {}
        changes: list[HealthChange] = []
        for start in range(0, len(schedules), HEALTH_BATCH):
            part = schedules[start : start + HEALTH_BATCH]
            assessed = health_of(store, part, self._policy)
            for schedule in part:
                health = assessed[schedule.id]
                current[schedule.name] = health.state
                before = None if self._last is None else self._last.get(schedule.name)
                # A schedule added since the last sweep is reported only when it is not healthy.
                old = Health.HEALTHY if before is None else before
                if self._last is not None and health.state is not old:
                    changes.append(HealthChange(schedule.name, old, health, now))
        self._last = current
        if changes:
            log.info(
                "%d schedule(s) changed health: %s",
                len(changes),
                ", ".join(f"{c.schedule} {c.old.value}->{c.new.state.value}" for c in changes[:10]),
            )
            self._report(changes)
        return changes
