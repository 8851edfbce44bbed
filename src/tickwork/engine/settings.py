"""The engine's knobs and the constants its parts share."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, fields
from datetime import timedelta

from ..config.files import MAX_END_BATCH_WINDOW, MAX_START_BATCH_WINDOW
from ..errors import ConfigError
from ..structures import MisfirePolicy

#: At most this many skipped fire times are written to the history for one gap of one schedule.
MAX_SKIPPED_RECORDS = 100
#: Seconds a reading of the database clock is trusted before a newer one replaces it (however
#: slow): NTP keeps two hosts' clock rates within tens of parts per million, so 0.5 ms at most.
CLOCK_SYNC_MAX_AGE = 10.0
#: Seconds after the last time something was due to this node during which it polls for the
#: next due time while everything it may claim is running elsewhere (see ClaimGate).
BUSY_POLL_WINDOW = 60.0
#: Seconds a next due time read from the store is used before it is read again, when no change was
#: notified meanwhile (other nodes' ends are not notified: they are seen this much later at most).
NEXT_DUE_MAX_AGE = 0.25
#: Seconds between reads of the database clock for sleep times; in between, the last reading
#: plus the monotonic time since stands in for it (a round trip and a commit saved per loop).
CLOCK_READ_INTERVAL = 1.0
#: Seconds between two prunes of the history.
PRUNE_INTERVAL = 3600.0
#: The longest wait the engine hands to ``threading`` (longer ones raise OverflowError there).
MAX_WAIT = min(threading.TIMEOUT_MAX, 365 * 86400.0)
#: Upper bounds of the engine's intervals and graces, in seconds (a day; a year for the grace).
MAX_INTERVAL = 86400.0
MAX_GRACE = 365 * 86400.0
MAX_IN_FLIGHT = 1_000_000


def clamp_wait(seconds: float) -> float:
    """``seconds`` as a wait ``threading`` accepts: 0 for NaN or negative, at most :data:`MAX_WAIT`."""
    if not seconds > 0:
        return 0.0
    return min(seconds, MAX_WAIT)


@dataclass(frozen=True)
class EngineSettings:
    """Engine knobs (the ``[scheduler]`` table; see docs/configuration.md). Checked on
    construction: a value out of range raises :class:`~tickwork.errors.ConfigError` naming it."""

    node_id: str
    batch_size: int = 100
    max_in_flight: int = 1000
    max_sleep: float = 60.0
    misfire: MisfirePolicy = MisfirePolicy.SKIP
    misfire_grace: float = 30.0
    hard_timeout_grace: float = 60.0
    reap_interval: float = 15.0
    renew_interval: float = 10.0
    history_retention: timedelta | None = timedelta(days=30)
    #: Claim fires due within this many seconds and start them on time from memory, so that
    #: the claim round trip is off the path between due time and start. Claiming begins once
    #: a fire is due within about half of it, so one claim gathers what came due meanwhile.
    lookahead: float = 1.0
    #: Seconds a run's end may wait for others to share one write (never past the moment its
    #: next fire could be claimed); 0 writes each pass's ends at once.
    end_batch_window: float = 0.1
    #: Seconds past a held fire's time (one claimed ahead) at which the loop wakes to start it:
    #: the fires due by then start in the same pass, not in a pass each. The most a held fire
    #: starts late; it never starts early. 0 wakes at each fire's time.
    start_batch_window: float = 0.015
    #: Seconds a fire may be overdue before any node claims it, whatever buckets it owns: a fire
    #: whose owners are behind (a burst, a slow or dead owner not yet declared dead) is then
    #: shared like under ``all``. Only matters when the membership restricts buckets.
    steal_after: float = 0.25

    def __post_init__(self) -> None:
        limits = {
            "max_sleep": (0.0, MAX_INTERVAL),
            "misfire_grace": (0.0, MAX_GRACE),
            "hard_timeout_grace": (0.0, MAX_GRACE),
            "reap_interval": (0.0, MAX_INTERVAL),
            "renew_interval": (0.0, MAX_INTERVAL),
            "steal_after": (0.0, MAX_GRACE),
        }
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in limits:
                low, high = limits[f.name]
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ConfigError(f"scheduler.{f.name}: expected a number, got {value!r}")
                if not math.isfinite(value) or not low < value <= high:
                    raise ConfigError(
                        f"scheduler.{f.name}: must be a finite number in ({low:g}, {high:g}], got {value}"
                    )
        for name, high in (("end_batch_window", MAX_END_BATCH_WINDOW), ("start_batch_window", MAX_START_BATCH_WINDOW)):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, int | float) and 0 <= value <= high):
                raise ConfigError(f"scheduler.{name}: must be between 0 and {high:g} seconds, got {value!r}")
        if not (isinstance(self.lookahead, int | float) and 0 <= self.lookahead <= 60):
            raise ConfigError(f"scheduler.lookahead: must be between 0 and 60 seconds, got {self.lookahead!r}")
        for name, high in (("batch_size", 100_000), ("max_in_flight", MAX_IN_FLIGHT)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise ConfigError(f"scheduler.{name}: must be an integer from 1 to {high}, got {value!r}")
        if self.history_retention is not None and not timedelta(0) < self.history_retention <= timedelta(days=36500):
            raise ConfigError(f"scheduler.history_retention_days: out of range: {self.history_retention}")
