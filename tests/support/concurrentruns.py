"""Schedules and readings shared by the tests of concurrent runs on real nodes (concurrency
limits, namespaces): a schedule that fires every second and lasts, the most runs at once, the
runs that started a job."""

from __future__ import annotations

from datetime import datetime, timedelta

from tickwork.structures import RunRecord, RunStatus, ScheduleSpec


def every_second(name: str, n: int, seconds: float, **options: object) -> ScheduleSpec:
    return ScheduleSpec(
        name=name,
        trigger_kind="cron",
        expression="* * * * * *",
        target="tests.support.cluster_jobs:lasting",
        arguments={"n": n, "seconds": seconds},
        timeout=timedelta(seconds=30),
        **options,  # type: ignore[arg-type]
    )


def most_at_once(runs: list[RunRecord], until: datetime) -> int:
    """The most runs whose [start, end) intervals overlap (a run still open ends at ``until``);
    an end at the same instant as a start is taken first."""
    events = []
    for r in runs:
        assert r.started_at is not None, r
        events.append((r.started_at, 1))
        events.append((r.finished_at or until, -1))
    events.sort(key=lambda e: (e[0], e[1]))
    now = most = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def ran(runs: list[RunRecord]) -> list[RunRecord]:
    """The runs that started a job (ended by themselves, or cut off by their node's stop)."""
    return [r for r in runs if r.status is not RunStatus.SKIPPED]
