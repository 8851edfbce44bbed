"""Bucket ownership on a consistent hash ring (uhashring's ketama ring with virtual nodes).

Schedules hash into :data:`~tickwork.structures.BUCKETS` buckets; each bucket is placed on the
ring and owned by the next ``owners`` distinct live nodes clockwise from it. When a node joins or
leaves, only the buckets next to its virtual nodes change owners.

Why uhashring: it is a maintained ketama implementation whose ``range(key, unique=True)`` walks
the ring for distinct nodes, which is exactly "two owners per bucket"; the ring is rebuilt only
when the live set changes (a few ms for 1,024 buckets).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from uhashring import HashRing

from tickwork.structures import BUCKETS


class BucketRing:
    """Which live nodes own which buckets.

    :param nodes: ids of the live nodes
    :param vnodes: virtual nodes per node (balance: max/mean load within 1.25 at 64)
    :param owners: distinct owners per bucket (fewer if fewer nodes are live)
    """

    def __init__(self, nodes: Iterable[str], *, vnodes: int = 64, owners: int = 2, buckets: int = BUCKETS) -> None:
        self.nodes = tuple(sorted(set(nodes)))
        self.vnodes = vnodes
        self.owners = owners
        self._owners: list[tuple[str, ...]] = []
        if not self.nodes:
            self._owners = [() for _ in range(buckets)]
            return
        ring = HashRing(nodes=list(self.nodes), vnodes=vnodes)
        size = min(owners, len(self.nodes))
        for bucket in range(buckets):
            found = ring.range(f"tickwork-bucket-{bucket}", size=size, unique=True)
            self._owners.append(tuple(n["nodename"] if isinstance(n, dict) else str(n) for n in found))

    def owners_of(self, bucket: int) -> tuple[str, ...]:
        return self._owners[bucket]

    def buckets_of(self, node: str) -> list[int]:
        return [b for b, owners in enumerate(self._owners) if node in owners]

    def assignment(self) -> Sequence[tuple[str, ...]]:
        return self._owners
