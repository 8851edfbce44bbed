"""A background heartbeat shared by the membership plugins."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from tickwork.abc import Membership, Store
from tickwork.errors import TickworkError
from tickwork.structures import NodeRecord

from .settings import HeartbeatSettings

log = logging.getLogger("tickwork.membership")


#: Seconds between heartbeats while they fail (a database outage), if less than the interval.
RETRY_AFTER_FAILURE = 0.2
#: Seconds between two warnings while heartbeats keep failing.
FAILURE_WARN_EVERY = 10.0
#: A node whose database session ended is dead once its heartbeat is this many intervals old
#: (a live node whose presence connection alone broke beats on within one while it takes its
#: lock again: that never waits for the new connection).
PRESENCE_STALE_BEATS = 1.5
#: Presence is read only once this node has held its own, and beaten, for this many intervals:
#: a database restart ends every session, and each live node takes its lock again at its next
#: beat; until then it looks absent (the nodes of a cluster share the interval).
PRESENCE_SETTLE_BEATS = 3.0


class HeartbeatMembership(Membership):
    """Announces the node in the store every ``heartbeat_interval`` seconds.

    :param options: the keys of :class:`~tickwork_membership.settings.HeartbeatSettings`
        (``heartbeat_interval``; ``node_ttl``: a node whose heartbeat is older than this, by the
        database clock, is dead; ``presence``: hold a lock that lives as long as this node's
        database session, and declare a node dead as soon as its session ended and its heartbeat
        is 1.5 intervals old, instead of waiting ``node_ttl``, on PostgreSQL and MySQL)
    """

    section = HeartbeatSettings
    settings: HeartbeatSettings

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.presence = self.settings.presence
        self.heartbeat_interval = self.settings.heartbeat_interval
        self.node_ttl = self.settings.node_ttl
        self.store: Store | None = None
        self.node_id = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_ok = -1e9
        self._healthy_since = 0.0
        self.live_nodes: list[str] = []
        self._callbacks: list[Callable[[], None]] = []
        self._rejoins = 0
        #: Nodes this one has found dead whose record is still there (announced once).
        self._dead: set[str] = set()
        self._stalled: Callable[[], str | None] = lambda: None

    def start(self, store: Store, node_id: str) -> None:
        self.store = store
        self.node_id = node_id
        self.beat()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="tickwork-heartbeat", daemon=True)
        self._thread.start()

    def beat(self) -> None:
        """Renew this node's heartbeat, then find dead nodes and release their claims at once.

        The first beat creates the node's record; later beats only refresh it. A record that is
        gone was removed by the others, who declared this node dead and released its claims:
        the node then registers afresh and the engine drops what they recorded (:meth:`rejoins`).
        """
        assert self.store is not None
        stalled = self._stalled()
        if stalled is not None:
            # A node whose loop is stuck starts nothing: vouching for it would keep the others
            # from taking over. Its record goes stale, and node_ttl later they release it.
            log.warning("not renewing the heartbeat of %s: its loop is stalled on %s", self.node_id, stalled)
            return
        # Returns at once: the store checks, and takes again, this node's presence on a thread
        # of its own, so a presence connection slow to open never makes this heartbeat late
        # (late while our lock is free, the others would declare us dead). It answers how long
        # the lock has been held as of its last check; a session that ended with a database
        # restart is taken again there, and its new age keeps this node from judging anyone by
        # presence until it has settled.
        present_for = self.store.hold_presence(self.node_id) if self.presence else None
        sent = time.monotonic()
        if self._thread is None:
            now = self.store.heartbeat(self.node_id)
        else:
            refreshed = self.store.refresh_heartbeat(self.node_id)
            if refreshed is None:
                self._declared_dead(sent)
                now = self.store.heartbeat(self.node_id)
            else:
                now = refreshed
        if not self.healthy():
            self._healthy_since = sent
        # Measured from before the round trip: the database may have recorded it that early.
        self._last_ok = sent
        # Right after our own outage every other node looks stale too (they could not beat
        # either): judge others only once we have been beating for a whole TTL ourselves.
        judge = sent - self._healthy_since >= self.node_ttl
        # Presence tells only once our own session has held it (and we have beaten) for a few
        # intervals: every live node has then had time to take its lock again after a restart.
        settle = self.heartbeat_interval * PRESENCE_SETTLE_BEATS
        by_presence = present_for is not None and present_for >= settle and sent - self._healthy_since >= settle
        records = self.store.nodes()
        self.live_nodes = [
            node.id for node in records if node.id == self.node_id or not self._released(node, now, judge, by_presence)
        ]
        # A dead node's record removed, or alive again: one of that id that dies is announced again.
        self._dead &= {node.id for node in records}
        self._dead -= set(self.live_nodes)

    def _released(self, node: NodeRecord, now: datetime, by_ttl: bool, by_presence: bool) -> bool:
        """Release ``node`` if it is dead: (with ``by_ttl``) its heartbeat older than
        ``node_ttl``, or (with ``by_presence``) its database session ended and its heartbeat 1.5
        intervals old. Whether it was released (the store judges again in the releasing
        transaction)."""
        assert self.store is not None
        silent = (now - node.heartbeat_at).total_seconds()
        cut_off = (
            "its end was not recorded (it may have ended on that node before its end was written, or been "
            "cut off mid-run)"
        )
        if by_ttl and silent > self.node_ttl:
            released = self.store.release_dead_node(
                node.id,
                self.node_ttl,
                f"node {node.id} stopped heartbeating (last {node.heartbeat_at.isoformat()}); run abandoned: {cut_off}",
            )
            how = f"no heartbeat for {silent:.1f}s"
        elif by_presence and silent > self.heartbeat_interval * PRESENCE_STALE_BEATS:
            released = self.store.release_absent_node(
                node.id,
                self.heartbeat_interval * PRESENCE_STALE_BEATS,
                f"node {node.id} died: its database session ended (last heartbeat {node.heartbeat_at.isoformat()}); "
                f"run abandoned: {cut_off}",
            )
            how = f"its database session ended; last heartbeat {silent:.1f}s ago"
        else:
            return False
        if released is None:  # it beat (or its session is there) after all: alive
            return False
        if node.id not in self._dead or released:
            # Once per death: a record kept while some of its rows are locked by another
            # session is judged again at every beat, and releases the rest once they are free.
            log.warning("node %s is dead (%s); released %d claim(s)", node.id, how, released)
        self._dead.add(node.id)
        return True

    def _declared_dead(self, sent: float) -> None:
        """This node's record was removed: the others declared it dead and released its claims."""
        silent = sent - self._last_ok
        # Unhealthy until the new record is written: nothing starts meanwhile.
        self._last_ok = -1e9
        self._rejoins += 1
        log.warning(
            "node %s was declared dead by the other nodes (its heartbeat record was removed and its claims "
            "released; its last heartbeat was %.1fs ago): dropping what it held and joining again as a new member",
            self.node_id,
            silent,
        )
        self._changed()

    def rejoins(self) -> int:
        return self._rejoins

    def watch_loop(self, stalled: Callable[[], str | None]) -> None:
        self._stalled = stalled

    def _loop(self) -> None:
        wait = self.heartbeat_interval
        failing_since: float | None = None
        warned_at = 0.0
        while not self._stop.wait(wait):
            try:
                self.beat()
            except TickworkError as exc:
                # Expected during a database outage; the node starts nothing until a beat succeeds,
                # so it tries again soon: the node resumes at most RETRY_AFTER_FAILURE after the
                # database answers again, rather than a heartbeat interval.
                wait = min(self.heartbeat_interval, RETRY_AFTER_FAILURE)
                now = time.monotonic()
                if failing_since is None:
                    failing_since = warned_at = now
                    log.warning("cannot renew the heartbeat of %s (%s); retrying every %.1fs", self.node_id, exc, wait)
                elif now - warned_at >= FAILURE_WARN_EVERY:
                    warned_at = now
                    log.warning(
                        "still cannot renew the heartbeat of %s after %.1fs (%s)",
                        self.node_id,
                        now - failing_since,
                        exc,
                    )
                continue
            if failing_since is not None:
                log.warning(
                    "heartbeat of %s renewed after %.1fs of failures", self.node_id, time.monotonic() - failing_since
                )
            wait, failing_since = self.heartbeat_interval, None
            self.after_beat()

    def after_beat(self) -> None:
        """Called after every successful heartbeat (the hash ring refreshes here)."""

    def healthy(self) -> bool:
        # Stop starting runs well before others may consider this node dead (node_ttl).
        return time.monotonic() - self._last_ok < self.node_ttl / 2

    def on_change(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def _changed(self) -> None:
        for callback in self._callbacks:
            callback()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.store is not None:
            try:
                self.store.remove_node(self.node_id)
            except TickworkError as exc:
                log.warning("could not remove node record of %s: %s", self.node_id, exc)
