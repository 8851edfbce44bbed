"""The options every hand-off executor (celery, rq, dramatiq) shares, declared once; each
executor's Section extends :class:`HandoffSettings` (importable without any broker client)."""

from __future__ import annotations

from tickwork.config import Flag, Integer, Number, Section

#: The longest wait a hand-off option accepts.
MAX_SECONDS = 30 * 86400.0

#: Publishing threads per node. Each takes the fires queued when it is free as one batch on its
#: own broker connection (docs/handoff.md#batches): one thread publishes while the other waits
#: for its batch's confirmations or its store look.
DEFAULT_THREADS = 2


class HandoffSettings(Section):
    """The options of every hand-off executor (docs/handoff.md#options)."""

    report_timeout = Number(
        3600,
        low=0.001,
        high=MAX_SECONDS,
        help="Seconds after which a hand-off no worker reported on stops blocking its schedule and is recorded "
        "`timed_out`.",
        details="Longer than the longest queue wait plus task.",
    )
    pickup_timeout = Number(
        60,
        low=0.001,
        high=MAX_SECONDS,
        help="Seconds after which a hand-off no worker reported started is logged as stuck and its schedule's "
        "health becomes `stuck`.",
        details="The run keeps its place (report_timeout still ends it); `tickwork jobs release NAME` ends it at "
        "once. Longer than the usual wait in the queue.",
    )
    no_overlap = Flag(
        True,
        help="Skip a fire while the schedule's previous hand-off is not final.",
        details="Turn it off when the workers run without the worker-side integration (nothing ever reports).",
    )
    publish_timeout = Number(
        10, low=0.001, high=MAX_SECONDS, help="Seconds one publish, confirmation included, may take."
    )
    threads = Integer(
        DEFAULT_THREADS,
        low=1,
        high=1000,
        help="Threads publishing, each on a broker connection of its own, so a slow broker never blocks the engine.",
        details="Each publishes the fires queued when it is free as one batch and waits for the broker's "
        "confirmations once per batch ([batches](handoff.md#batches)).",
    )
