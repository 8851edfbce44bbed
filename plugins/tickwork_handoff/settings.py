"""The options every hand-off executor (celery, rq, dramatiq) shares, declared once; each
executor's Section extends :class:`HandoffSettings` (importable without any broker client)."""

from __future__ import annotations

from tickwork.config import Flag, Integer, Number, Section

#: The longest wait a hand-off option accepts.
MAX_SECONDS = 30 * 86400.0

#: Publishing threads per node. Each publish waits for the broker's confirmation, so they wait
#: far more than they compute: 5,000 Celery fires on two nodes were handed off at 176/s with 2
#: threads and 298/s with 16 (docs/benchmarks.md#hand-off-tickwork-vs-celery-beat).
DEFAULT_THREADS = 16


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
        help="Threads publishing, so a slow broker never blocks the engine.",
        details="Each waits for the broker's confirmation: 16 handed 5,000 Celery fires off at 298/s where 2 gave "
        "176/s ([benchmarks](benchmarks.md#hand-off-tickwork-vs-celery-beat)).",
    )
