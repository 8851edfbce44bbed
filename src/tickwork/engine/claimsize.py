"""How many fires the next claim asks for (docs/claim-protocol.md#claim-size).

A claim of ``batch_size`` fires is one round trip per hundred fires by default. While a backlog
lasts (the last claim came back full) and no fire waits on this node for its time *soon*, the
node doubles its claims, up to the store's ``claim_ceiling``: a herd due at once (a minute of
hand-offs, a burst, a second's fires claimed ahead) is taken in a few large claims instead of
many small ones. A fire waiting for its time (held for its start, a fenced start in flight, a
retry) that is due before a larger claim would be back brings claims back to ``batch_size``: a
large claim is a longer pass, and a waiting fire starts only between passes, so it would start
late by the difference (measured: a claim of 1,000 rows of one namespace raised another's
every-second p99 from 32-41 to 104-203 ms, docs/benchmarks.md). A fire due later than that is not
delayed by the claim, so it does not stop the growth: a herd overdue beside another namespace's
fires held for the next second drains in larger claims.

Claims that reach ahead of their fires' time (``lookahead``) never grow. Every owner of those
fires claims them at about the same time, a batch each in turn; a node whose claims doubled would
take most of a second's fires before the others had claimed their first batch (measured: 11,479
of 24,000 fires on one of three nodes, the herd's p99 lag 60 to 70 ms).
"""

from __future__ import annotations

from collections.abc import Callable

#: How many estimated claim durations ahead a waiting fire must be due for a claim to grow: the
#: estimate scales the last claim's time per fire, and a loaded database is slower than that.
SAFETY = 3.0


class ClaimSize:
    """The size of the next claim.

    :param batch: the store's ``batch_size``: the claim while anything waits, and the first
    :param ceiling: the largest claim (the store's ``claim_ceiling``; ``batch``: never grow)
    :param waiting_within: whether any fire waits on this node for its time and is due within
        the given seconds (``float("inf")``: at all)
    :param margin: seconds a waiting fire needs before its time besides the claim (the fenced
        start's lead: its start statement goes out before its time)
    """

    def __init__(self, batch: int, ceiling: int, waiting_within: Callable[[float], bool], margin: float = 0.0) -> None:
        self._batch = batch
        self._ceiling = max(batch, ceiling)
        self._waiting_within = waiting_within
        self._margin = margin
        self._size = batch
        #: Seconds per fire of the last claim that took any (``None``: none measured yet).
        self._per_fire: float | None = None

    def _blocked(self, size: int) -> bool:
        """Whether a claim of ``size`` would be a late start for a waiting fire: one due before
        :data:`SAFETY` times the claim's estimated duration and the margin. Before any claim
        was timed, any waiting fire blocks."""
        if size <= self._batch:
            return False
        if self._per_fire is None:
            return self._waiting_within(float("inf"))
        return self._waiting_within(SAFETY * self._per_fire * size + self._margin)

    def next(self) -> int:
        """How many fires the next claim may take (before the room left for them)."""
        if self._blocked(self._size):
            self._size = self._batch
        return self._size

    def claimed(self, count: int, limit: int, seconds: float | None = None, *, ahead: bool = False) -> None:
        """A claim asked for ``limit``, took ``count`` in ``seconds``, ``ahead`` of the time of
        some of them. A full one that was not ahead doubles the next unless a waiting fire would
        be due before the larger claim is back (kept as it is when the room left, not the size,
        was the limit); one that was not full, or was ahead, brings it back to the batch."""
        if count and seconds is not None:
            self._per_fire = seconds / count
        if count < limit or ahead:
            self._size = self._batch
        elif limit >= self._size:
            grown = min(self._size * 2, self._ceiling)
            self._size = self._batch if self._blocked(grown) else grown
