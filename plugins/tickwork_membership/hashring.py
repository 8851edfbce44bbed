"""``hashring`` — FTL's design: live nodes form a consistent hash ring; every schedule (through
its bucket) is owned by two live nodes, so one can die without a gap; a node only attempts what
it owns. The ownership filter runs inside the due query (``bucket = ANY(...)``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from tickwork.abc import Store

from .heartbeat import HeartbeatMembership
from .ring import BucketRing
from .settings import HashRingSettings

log = logging.getLogger("tickwork.hashring")


class HashRingMembership(HeartbeatMembership):
    """:param options: the keys of :class:`~tickwork_membership.settings.HashRingSettings`
    (``vnodes``: virtual nodes per node on the ring; ``owners``: owners per bucket, 2 so that
    one may die without a gap; the heartbeat's)"""

    section = HashRingSettings
    settings: HashRingSettings

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.vnodes = self.settings.vnodes
        self.owners = self.settings.owners
        self._lock = threading.Lock()
        self._ring: BucketRing | None = None
        self._owned: list[int] = []

    def start(self, store: Store, node_id: str) -> None:
        super().start(store, node_id)
        self.refresh()

    def after_beat(self) -> None:
        super().after_beat()
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the ring if the live set changed (called after every heartbeat)."""
        live = set(self.live_nodes) | {self.node_id}
        with self._lock:
            if self._ring is not None and set(self._ring.nodes) == live:
                return
            ring = BucketRing(live, vnodes=self.vnodes, owners=self.settings.owners)
            before = None if self._ring is None else set(self._ring.nodes)
            self._ring = ring
            self._owned = ring.buckets_of(self.node_id)
        log.info(
            "ring now %s (was %s); %s owns %d of %d buckets",
            sorted(live),
            sorted(before) if before is not None else "-",
            self.node_id,
            len(self._owned),
            len(ring.assignment()),
        )
        self._changed()

    def owned_buckets(self) -> Sequence[int] | None:
        with self._lock:
            return self._owned

    def buckets_for(self, node_id: str, live: Sequence[str]) -> Sequence[int] | None:
        return BucketRing(live, vnodes=self.vnodes, owners=self.settings.owners).buckets_of(node_id)
