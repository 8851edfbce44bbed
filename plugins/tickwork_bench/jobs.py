"""The job every benchmark schedule runs (executor ``local``)."""

from __future__ import annotations

#: The ``local`` executor target of every seeded schedule.
NOOP_TARGET = "tickwork_bench.jobs:noop"


def noop() -> None:
    """Do nothing: the benchmarks measure the scheduler, not the job."""
