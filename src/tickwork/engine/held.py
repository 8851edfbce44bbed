"""Fires claimed ahead of their time (``lookahead``), waiting in memory to start on time."""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..errors import StoreError
from ..structures import Claim

log = logging.getLogger("tickwork.engine")


@dataclass
class HeldFire:
    """A claim taken ahead of its time; it starts at its ``scheduled_for`` by the database clock."""

    claim: Claim
    #: The monotonic time the claim's answer arrived (its ``claimed_at`` plus the time since is
    #: a lower bound of the database clock).
    mono_claimed: float


class HeldFires:
    """The held fires, earliest first.

    :param now_for: the database clock for a held fire (see :meth:`DatabaseClock.since_claim`)
    """

    def __init__(self, now_for: Callable[[HeldFire], datetime]) -> None:
        # (scheduled_for, seq, fire): ordered by tuple comparison in C (a dataclass's generated
        # ordering builds two tuples in Python per comparison).
        self._heap: list[tuple[datetime, int, HeldFire]] = []
        self._seq = itertools.count()
        self._now_for = now_for

    def __len__(self) -> int:
        return len(self._heap)

    def hold(self, claim: Claim, mono_claimed: float) -> None:
        heapq.heappush(self._heap, (claim.scheduled_for, next(self._seq), HeldFire(claim, mono_claimed)))

    def seconds_until_next(self) -> float | None:
        """Seconds until the earliest held fire is due (0 when it is), ``None`` when none is held."""
        if not self._heap:
            return None
        due, _, first = self._heap[0]
        return max(0.0, (due - self._now_for(first)).total_seconds())

    def seconds_until(self, fire: HeldFire) -> float:
        """Seconds until ``fire`` is due by the database clock (0 when it is)."""
        return max(0.0, (fire.claim.scheduled_for - self._now_for(fire)).total_seconds())

    def pop_due(self, lead: float = 0.0) -> list[HeldFire]:
        """Take the held fires due within ``lead`` seconds, earliest first."""
        due: list[HeldFire] = []
        heap = self._heap
        ahead = timedelta(seconds=lead)
        while heap:
            # Any fire's reading is a lower bound of the database clock, so it also tells which
            # later fires are due (never too early); a later fire's own reading may be higher.
            now = self._now_for(heap[0][2]) + ahead
            if heap[0][0] > now:
                break
            while heap and heap[0][0] <= now:
                due.append(heapq.heappop(heap)[2])
        return due

    def start_due(self, start: Callable[[list[Claim]], list[bool]], lead: float = 0.0) -> list[HeldFire]:
        """Take the held fires due within ``lead`` seconds and return those whose fenced start ``start``
        (:meth:`tickwork.abc.Store.start_held`, one statement for all of them) granted. A refused
        fire is forgotten: it was taken over, or its deadline passed and it is about to be (any
        node's takeover gives it back to be run elsewhere). On a store error every fire is held
        again, still this node's to start or to lose to a takeover.

        :raises tickwork.errors.StoreError: after holding the fires again
        """
        due = self.pop_due(lead)
        if not due:
            return []
        try:
            granted = start([fire.claim for fire in due])
        except StoreError:
            for fire in due:
                self.hold(fire.claim, fire.mono_claimed)
            raise
        refused = [fire.claim.spec.name for fire, ok in zip(due, granted, strict=True) if not ok]
        if refused:
            log.warning(
                "not starting %d fire(s) claimed ahead: taken over by another node, past their start deadline, or "
                "their schedule rows locked by another transaction: %s",
                len(refused),
                ", ".join(refused[:10]) + (" ..." if len(refused) > 10 else ""),
            )
        return [fire for fire, ok in zip(due, granted, strict=True) if ok]

    def clear(self) -> int:
        """Forget every held fire (the others released them); how many there were."""
        dropped = len(self._heap)
        self._heap = []
        return dropped

    def count(self, which: Callable[[Claim], bool]) -> int:
        """How many held claims ``which`` accepts."""
        return sum(1 for _, _, fire in self._heap if which(fire.claim))

    def claims(self) -> list[Claim]:
        """The held claims, earliest first."""
        return [fire.claim for _, _, fire in sorted(self._heap)]

    def give_back(self, unclaim: Callable[[list[Claim]], int]) -> int:
        """Hand every held claim to ``unclaim``; forget them only once it returned (a store error
        leaves them held, still this node's to release)."""
        if not self._heap:
            return 0
        given = unclaim([fire.claim for _, _, fire in self._heap])
        self._heap = []
        return given
