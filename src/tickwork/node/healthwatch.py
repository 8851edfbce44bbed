"""The health sweep behind ``tickwork_health_changed``: one live node compares each schedule's
health with the state last announced for it, kept in the store, and tells the plugins what
changed, once per change across the cluster, like Alertmanager:

* a schedule entering a state that needs attention (``failing``, ``overdue``, ...) is announced
  (``firing``), also one already in it when the first sweep sees it (a new cluster, a new table);
* leaving it is announced (``resolved``); a change between two quiet states (``healthy`` and
  ``paused``) too (``changed``), but a schedule first seen quiet is only recorded;
* one still in it is announced again every ``[health] repeat_interval`` (``repeat``).

Who sweeps: the live node with the lowest id, as each node's membership sees the live nodes.
What was announced is in the store (``tickwork_health_announcements``), written by a conditional
write on the version read: a node announces only what its write moved on, so two nodes that
both believe they sweep (a split view for a heartbeat or two, a takeover) never both announce,
a restart announces nothing again, and a change during a takeover is announced by the next
sweeper. See docs/observability.md#health-changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..admin.health import HealthPolicy, health_of
from ..admin.healthreads import HEALTH_BATCH
from ..structures import AlertKind, Announcement, AnnouncementClaim, Health, HealthChange, Schedule, ScheduleHealth

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
        repeat = node.config.health.repeat_interval
        self._repeat = timedelta(seconds=repeat) if repeat > 0 else None
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
        """One sweep: the announcements this node claimed (reported), or nothing when another
        node sweeps."""
        node = self._node
        members = node.members()
        if not members or min(members) != node.node_id:
            return []
        store = node.store
        # What was announced is read before anything the health is assessed from (definitions,
        # runs). An announcement another sweeper landed was assessed from what was committed
        # before it, which this node's later reads see too; read the other way round, a sweep
        # could assess from runs older than an announcement it then read and announce the change
        # back (a recovery announced, then "failing" again from a read made before the success).
        # One read of the announcements alone: listing the schedules first for their ids cost a
        # second full read of every schedule per sweep (docs/observability.md#health-changes).
        announced = store.all_announcements()
        schedules = store.find_schedules()
        now = store.now()
        changes: list[HealthChange] = []
        for start in range(0, len(schedules), HEALTH_BATCH):
            part = schedules[start : start + HEALTH_BATCH]
            assessed = health_of(store, part, self._policy)
            planned = [self._plan(s, assessed[s.id], announced.get(s.id), now) for s in part]
            due = [p for p in planned if p is not None]
            if due:
                landed = store.claim_announcements([claim for claim, _ in due])
                changes += [change for (_, change), ok in zip(due, landed, strict=True) if ok and change is not None]
        if changes:
            log.info(
                "%d schedule(s) changed health: %s",
                len(changes),
                ", ".join(f"{c.schedule} {c.old.value}->{c.new.state.value} ({c.kind})" for c in changes[:10]),
            )
            self._report(changes)
        return changes

    def _plan(
        self, schedule: Schedule, health: ScheduleHealth, before: Announcement | None, now: datetime
    ) -> tuple[AnnouncementClaim, HealthChange | None] | None:
        """What to record for ``schedule`` and what to announce once it landed (``None``:
        record only), or ``None`` when its announcement stands."""
        state = health.state
        if before is None:
            # First sight: a state that needs attention is announced; a quiet one is the baseline.
            claim = AnnouncementClaim(schedule.id, state.value, health.alerting, None, now)
            firing = HealthChange(schedule.name, Health.HEALTHY, health, now, kind=AlertKind.FIRING)
            return claim, firing if health.alerting else None
        if before.state != state.value or before.alerting != health.alerting:
            if health.alerting:
                kind = AlertKind.FIRING
            else:
                kind = AlertKind.RESOLVED if before.alerting else AlertKind.CHANGED
            claim = AnnouncementClaim(schedule.id, state.value, health.alerting, before, now)
            return claim, HealthChange(schedule.name, _state(before.state), health, now, kind=kind)
        if health.alerting and self._repeat is not None and now - before.at >= self._repeat:
            claim = AnnouncementClaim(schedule.id, state.value, True, before, now, repeat=True)
            return claim, HealthChange(schedule.name, state, health, now, kind=AlertKind.REPEAT, since=before.since)
        return None


def _state(value: str) -> Health:
    """A stored state; one this tickwork does not know (written by a newer node of a cluster
    being upgraded) reads as ``healthy``, so the change away from it is still announced."""
    try:
        return Health(value)
    except ValueError:
        return Health.HEALTHY
