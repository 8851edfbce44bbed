"""Failures grouped by error, for the runs page: the failed and timed-out fires of the runs shown,
one group per error (its summary line, the part before the traceback), the most frequent first.
What an operator asks first after an outage: is it one cause or many, and which schedules?"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tickwork.structures import FAILING, RunRecord, split_error

#: Characters of an error's summary a group is keyed and shown by (a long message is cut).
SUMMARY_CHARS = 200


@dataclass
class FailureGroup:
    """The failed fires whose latest attempt ended with one error."""

    error: str
    runs: list[RunRecord] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.runs)

    @property
    def schedules(self) -> list[str]:
        """The schedules that failed so, most failures first."""
        counts: dict[str, int] = {}
        for run in self.runs:
            counts[run.schedule] = counts.get(run.schedule, 0) + 1
        return sorted(counts, key=lambda name: (-counts[name], name))

    @property
    def latest(self) -> RunRecord:
        return max(self.runs, key=lambda r: (r.scheduled_for, r.attempt, r.id))


def summary_of(error: str | None) -> str:
    """The error's first summary line (``ConnectionError: refused``), cut to :data:`SUMMARY_CHARS`."""
    head = (split_error(error)[0] or "").strip()
    line = head.splitlines()[0].strip() if head else ""
    if not line:
        return "(no message recorded)"
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def failure_groups(records: Iterable[RunRecord]) -> list[FailureGroup]:
    """The failed fires of ``records`` grouped by error, the most failures first (then the most
    recent). A fire counts once, by its latest attempt: a retry that succeeded is no failure."""
    latest: dict[tuple[str, object], RunRecord] = {}
    for run in records:
        key = (run.schedule, run.scheduled_for)
        kept = latest.get(key)
        if kept is None or (run.attempt, run.id) > (kept.attempt, kept.id):
            latest[key] = run
    groups: dict[str, FailureGroup] = {}
    for run in latest.values():
        if run.status in FAILING:
            summary = summary_of(run.error)
            groups.setdefault(summary, FailureGroup(summary)).runs.append(run)
    return sorted(groups.values(), key=lambda g: (-g.count, -g.latest.scheduled_for.timestamp(), g.error))
