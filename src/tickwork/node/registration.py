"""A node's claim on its id: recorded with a token of this process, refused while a live process
(one whose heartbeat advances) uses it, and given up early when the caller abandons the start."""

from __future__ import annotations

import threading
import time

from ..abc import Store
from ..errors import NodeIdInUseError


class StartAbandoned(Exception):
    """Raised in the thread of a start whose caller gave up on it (a cancelled ``async with``);
    that caller sees its ``CancelledError``, never this."""


class Registration:
    """Registers ``node_id`` for this process (``instance``) in ``store``.

    :param ttl: the membership's ``node_ttl``: how long a crashed predecessor's record stays fresh
    """

    def __init__(self, store: Store, node_id: str, instance: str, ttl: float) -> None:
        self.store = store
        self.node_id = node_id
        self.instance = instance
        self.ttl = ttl
        #: Set when the caller of a start gave up on it (a cancelled ``async with``): the start
        #: stops at its next step instead of finishing for nothing.
        self.abandoned = threading.Event()

    def check(self) -> None:
        """:raises StartAbandoned: if the start was abandoned"""
        if self.abandoned.is_set():
            raise StartAbandoned(f"the start of node {self.node_id} was abandoned (cancelled)")

    def register(self) -> None:
        """Record this process under the node id, unless a live process uses it. A record whose
        heartbeat is fresh but no longer advances is a predecessor that crashed (a restart with a
        fixed id): wait for it to go stale, at most ``ttl``. One that advances is live.

        :raises NodeIdInUseError: if a live node uses the id
        :raises StartAbandoned: if the start was abandoned meanwhile
        """
        live = self.store.register_node(self.node_id, self.instance, self.ttl)
        if live is None:
            return
        seen = live.heartbeat_at
        deadline = time.monotonic() + self.ttl
        while live is not None and live.heartbeat_at == seen and time.monotonic() < deadline:
            if self.abandoned.wait(min(0.25, self.ttl / 8)):
                raise StartAbandoned(f"the start of node {self.node_id} was abandoned (cancelled)")
            live = self.store.register_node(self.node_id, self.instance, self.ttl)
        if live is not None:
            raise NodeIdInUseError(
                f"node id {self.node_id!r} is in use by a live node (it is heartbeating); give each node "
                "its own scheduler.node_id"
            )
