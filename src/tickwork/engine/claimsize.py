"""How many fires the next claim asks for (docs/claim-protocol.md#claim-size).

A claim of ``batch_size`` fires is one round trip per hundred fires by default. While a backlog
lasts (the last claim came back full) and no fire waits on this node for its time, the node
doubles its claims, up to the store's ``claim_ceiling``: a herd due at once (a minute of
hand-offs, a burst) is taken in a few large claims instead of many small ones. Whenever a fire
waits for its time (held for its start, a fenced start in flight, a retry), claims go back to
``batch_size``: a large claim is a longer pass, and a waiting fire starts only between passes, so
it would start late by the difference (measured: a claim of 1,000 rows of one namespace raised
another's every-second p99 from 32-41 to 104-203 ms, docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable


class ClaimSize:
    """The size of the next claim.

    :param batch: the store's ``batch_size``: the claim while anything waits, and the first
    :param ceiling: the largest claim (the store's ``claim_ceiling``; ``batch``: never grow)
    :param waiting: whether any fire waits on this node for its time
    """

    def __init__(self, batch: int, ceiling: int, waiting: Callable[[], bool]) -> None:
        self._batch = batch
        self._ceiling = max(batch, ceiling)
        self._waiting = waiting
        self._size = batch

    def next(self) -> int:
        """How many fires the next claim may take (before the room left for them)."""
        if self._waiting():
            self._size = self._batch
        return self._size

    def claimed(self, count: int, limit: int) -> None:
        """A claim asked for ``limit`` and took ``count``. A full one with nothing waiting doubles
        the next (kept as it is when the room left, not the size, was the limit); one that was
        not full, or anything waiting, brings it back to the batch."""
        if count < limit or self._waiting():
            self._size = self._batch
        elif limit >= self._size:
            self._size = min(self._size * 2, self._ceiling)
