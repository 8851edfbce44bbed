"""The engine's knobs and the constants its parts share."""

from __future__ import annotations

import threading
from datetime import timedelta

from ..config.tables import SchedulerConfig, StoreSettings

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
#: Seconds between two looks for pauses that ended (``jobs pause --until``): one indexed read of
#: the pauses whose end passed, so a pause lasts at most this much longer than asked.
RESUME_INTERVAL = 1.0
#: Seconds between passes of the loop while the membership is unhealthy (nothing starts then):
#: a node resumes at most this long after its heartbeat is renewed again.
UNHEALTHY_POLL = 0.1
#: Seconds between two prunes of the history.
PRUNE_INTERVAL = 3600.0
#: The longest wait the engine hands to ``threading`` (longer ones raise OverflowError there).
MAX_WAIT = min(threading.TIMEOUT_MAX, 365 * 86400.0)


def clamp_wait(seconds: float) -> float:
    """``seconds`` as a wait ``threading`` accepts: 0 for NaN or negative, at most :data:`MAX_WAIT`."""
    if not seconds > 0:
        return 0.0
    return min(seconds, MAX_WAIT)


class EngineSettings(SchedulerConfig):
    """The engine's knobs: the ``[scheduler]`` table, as declared in
    :class:`~tickwork.config.SchedulerConfig` (defaults, ranges, meaning: docs/configuration.md),
    and the store's claim batch size. Checked on construction: a value out of range raises
    :class:`~tickwork.errors.ConfigError` naming it (``scheduler.max_sleep: ...``).

    A node builds it from its configuration with :meth:`of`; tests construct it with keywords.
    """

    #: Not a ``[scheduler]`` key: the ``batch_size`` option of the store the engine claims from
    #: (its one declaration).
    batch_size = StoreSettings.batch_size

    @classmethod
    def of(cls, scheduler: SchedulerConfig, *, batch_size: int = 100) -> EngineSettings:
        """The settings of a node configured with ``scheduler`` whose store claims ``batch_size``
        schedules per statement."""
        return cls(**scheduler.as_dict(), batch_size=batch_size)

    @property
    def history_retention(self) -> timedelta | None:
        """How long finished runs are kept (``history_retention_days``); ``None``: forever."""
        days = self.history_retention_days
        return timedelta(days=days) if days else None
