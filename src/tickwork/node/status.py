"""What a node says of itself while it runs: whether it runs, its runs in flight and fires held,
its health (what readiness probes ask, e.g. the metrics plugin's ``/healthz``) and the live
members it sees."""

from __future__ import annotations

from ..abc import Membership, Store
from ..engine import Engine


class NodeStatus:
    """Mixed into :class:`~tickwork.node.Node`, which provides the parts read here."""

    node_id: str
    store: Store
    membership: Membership
    engine: Engine
    _opened: bool
    _looping: bool

    @property
    def running(self) -> bool:
        """True from :meth:`start` (or :meth:`run`) until the node has stopped."""
        return self._looping and self._opened

    @property
    def in_flight(self) -> int:
        """Runs handed to executors that have not ended."""
        return len(self.engine.in_flight)

    @property
    def held(self) -> int:
        """Fires claimed ahead of their time, waiting in memory to start."""
        return len(self.engine.held_fires) + len(self.engine.fenced_starts)

    def health(self) -> tuple[bool, str]:
        """(healthy, reason): the store answers, the loop is not stalled (a pass waiting longer than
        ``node_ttl / 2``) and this node's heartbeat is fresh."""
        if not self._opened:
            return False, "node is not running"
        if self.engine.stopping:
            return False, "node is stopping"
        try:
            self.store.now()
        except Exception as exc:
            return False, f"store unreachable: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        stalled = self.engine.watch.stalled()
        if stalled is not None:
            return False, f"loop stalled: waiting on {stalled}"
        if not self.membership.healthy():
            return False, "heartbeat is stale: this node could not renew its heartbeat in the store"
        return True, "ok"

    def members(self) -> list[str]:
        """The live nodes as this node's membership sees them."""
        live = self.membership.live_nodes
        return sorted(live) if live else [self.node_id]
