"""The options of ``[membership]`` for the heartbeat memberships (``single``, ``all``) and
``hashring``, which extends them; declared once."""

from __future__ import annotations

from collections.abc import Callable

from tickwork.abc import DEFAULT_NODE_TTL
from tickwork.config import Flag, Integer, Number, Section
from tickwork.errors import ConfigError


class HeartbeatSettings(Section, table="membership"):
    """``[membership]`` with ``plugin = "single"`` or ``"all"``."""

    heartbeat_interval = Number(
        1,
        low=0.05,
        high=3600,
        help="Seconds between this node's heartbeats in the store (what `tickwork nodes` shows).",
    )
    node_ttl = Number(
        DEFAULT_NODE_TTL,
        low=0,
        high=86400,
        low_open=True,
        help="A node whose last heartbeat (database clock) is older than this many seconds is dead: the first live "
        "node to notice releases its claims and removes it.",
        details="Must exceed two heartbeat intervals. A node whose own heartbeats fail stops starting runs once its "
        "last successful one is `node_ttl / 2` old.",
    )
    presence = Flag(
        True,
        help="PostgreSQL and MySQL stores: hold a lock that lives as long as this node's database session, on a "
        "connection of its own, and declare a node dead as soon as its session has ended and its heartbeat is 1.5 "
        "intervals old, instead of after `node_ttl` ([cluster.md](cluster.md#when-a-node-dies)).",
        details="`false` behind a transaction-mode connection pooler, where it cannot help. SQLite ignores it.",
    )

    def validate(self, where: Callable[[str], str]) -> None:
        if self.node_ttl <= self.heartbeat_interval * 2:
            raise ConfigError(
                f"{where('node_ttl')}: must exceed two heartbeat intervals ({self.node_ttl:g} <= 2 x "
                f"{self.heartbeat_interval:g})"
            )


class HashRingSettings(HeartbeatSettings):
    """``[membership]`` with ``plugin = "hashring"``."""

    vnodes = Integer(
        64,
        low=1,
        high=10_000,
        help="Virtual nodes per node on the ring (balance: the busiest node carries at most 1.25 times the mean with "
        "3 to 10 nodes).",
    )
    owners = Integer(2, low=1, high=1024, help="Live nodes that attempt each schedule; 2 lets one die without a gap.")
