"""Plugins for the tests of the health announcements (``tickwork_health_changed``): a listener
that asks for the health sweep and records what it is told, and a membership that sees no other
node, so that every node using it believes it is the one that sweeps (a split view that lasts)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import tickwork
from tickwork.abc import Membership
from tickwork.plugin import Registry
from tickwork.structures import HealthChange
from tickwork_membership.single import SingleMembership


class Listener:
    """Asks every node it is given to for the sweep and records the announcements, each with the
    node that made it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.heard: list[tuple[str, HealthChange]] = []

    @tickwork.hookimpl
    def tickwork_watch_health(self, node_id: str) -> bool:
        return True

    @tickwork.hookimpl
    def tickwork_health_changed(self, node_id: str, changes: Sequence[HealthChange]) -> None:
        with self._lock:
            self.heard += [(node_id, change) for change in changes]

    def of(self, schedule: str) -> list[HealthChange]:
        with self._lock:
            return [change for _, change in self.heard if change.schedule == schedule]

    def kinds(self, schedule: str) -> list[str]:
        return [f"{c.kind.value}:{c.old.value}->{c.new.state.value}" for c in self.of(schedule)]

    def schedules(self) -> set[str]:
        with self._lock:
            return {change.schedule for _, change in self.heard}


class BlindMembership(SingleMembership):
    """``single`` that reports no live node but itself: every node using it sweeps."""

    @property  # type: ignore[override]
    def live_nodes(self) -> list[str]:
        return []

    @live_nodes.setter
    def live_nodes(self, value: Any) -> None:
        pass  # the heartbeat's view of the others is dropped on purpose


class Blind:
    """The plugin registering :class:`BlindMembership` as ``blind``."""

    @tickwork.hookimpl
    def tickwork_register_memberships(self, registry: Registry[type[Membership]]) -> None:
        registry.add("blind", BlindMembership)
