"""The database clock as the engine sees it between reads: a reading plus monotonic time since."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta

from ..abc import Store
from .settings import CLOCK_READ_INTERVAL, CLOCK_SYNC_MAX_AGE


class DatabaseClock:
    """ "Now" by the database clock, never ahead of it, at the cost of a read per second at most.

    :param fake: tests only: replaces the database clock (both readings and estimates)
    :param monotonic: the node's monotonic clock (tests pass a fake one to step time by hand)
    """

    def __init__(
        self,
        store: Store,
        fake: Callable[[], datetime] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.fake = fake
        self.monotonic = monotonic
        # (database time, monotonic time right after it was read, round trip of the read).
        self._sync: tuple[datetime, float, float] | None = None
        self._read_at = -CLOCK_READ_INTERVAL

    def now(self) -> datetime:
        """The database clock (a lower bound, behind by well under a millisecond), read from the
        database at most every :data:`CLOCK_READ_INTERVAL` seconds."""
        if self.fake is not None:
            return self.fake()
        now_mono = self.monotonic()
        synced = self._synced(now_mono)
        if synced is not None and now_mono - self._read_at < CLOCK_READ_INTERVAL:
            return synced
        return self.read()

    def estimate(self) -> datetime | None:
        """The last reading plus the monotonic time since, without reading (``None`` before the
        first reading): for decisions that must not fail on a database error."""
        if self.fake is not None:
            return self.fake()
        return self._synced(self.monotonic())

    def read(self) -> datetime:
        """Read the database clock and keep the tightest recent reading."""
        before = self.monotonic()
        now = self.store.now()
        after = self.monotonic()
        self._read_at = after
        sync = self._sync
        if sync is None or after - before <= sync[2] or after - sync[1] > CLOCK_SYNC_MAX_AGE:
            self._sync = (now, after, after - before)
        return now

    def _synced(self, now_mono: float) -> datetime | None:
        sync = self._sync
        return None if sync is None else sync[0] + timedelta(seconds=now_mono - sync[1])

    def since_claim(self, claimed_at: datetime, mono_claimed: float, now_mono: float) -> datetime:
        """The database clock now, never ahead of it (a claim taken ahead of its time must not
        start early): the later of two lower bounds, the claim's time plus the monotonic time
        since its answer arrived and the last clock reading plus the time since. Each is behind
        by at most the round trip it came with; the claim's can be tens of milliseconds under
        load, the clock reading's well under one."""
        if self.fake is not None:
            return self.fake()
        now = claimed_at + timedelta(seconds=now_mono - mono_claimed)
        synced = self._synced(now_mono)
        return now if synced is None else max(now, synced)

    def before(self, now: datetime, seconds: float) -> datetime:
        """The estimate ``now`` (of :meth:`since_claim`) as of ``seconds`` earlier: both of its
        lower bounds advance with the monotonic clock. A fake clock stands still between the
        steps a test makes: its time is ``now`` whatever the monotonic clock did."""
        return now if self.fake is not None else now - timedelta(seconds=seconds)
