"""What an observing plugin reads from ended runs, shared by the Prometheus and OpenTelemetry
plugins so that both report the same figures under the same buckets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..structures import Finish

#: Fire lag (start - scheduled time): from on time to a missed minute.
LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: Claim statements: a few ms to a slow second.
CLAIM_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass
class RunFigures:
    """Runs ended in one batch: how many by status, each run's lag and (when it ended) duration."""

    by_status: dict[str, int] = field(default_factory=dict)
    lags: list[float] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)


def run_figures(results: Sequence[Finish]) -> RunFigures:
    """The figures of ``results``: a run's start is its ``started_at``, or its claim's time for a
    run that never started; negative lags and durations (clock steps) count as 0."""
    figures = RunFigures()
    for f in results:
        status = f.outcome.status.value
        figures.by_status[status] = figures.by_status.get(status, 0) + 1
        started = f.started_at or f.claim.claimed_at
        figures.lags.append(max(0.0, (started - f.claim.scheduled_for).total_seconds()))
        if f.finished_at is not None:
            figures.durations.append(max(0.0, (f.finished_at - started).total_seconds()))
    return figures
