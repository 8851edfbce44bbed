"""How the failover scenarios are judged (tests/system/test_failover.py, benchmarks/failover_chaos.py):
the history rows of their every-second schedules, the executions the jobs recorded, each node's
share, and the fire times missing from a window."""

from __future__ import annotations

import collections
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from tickwork.sql.schema import runs, schedules
from tickwork_postgres.store import PostgresStore

#: Every-second schedules in each failover scenario.
SCHEDULES = 30


class Run:
    """One run row with its schedule's name."""

    def __init__(self, row: object) -> None:
        self.name: str = row.name  # type: ignore[attr-defined]
        self.scheduled_for: datetime = row.scheduled_for  # type: ignore[attr-defined]
        self.started_at: datetime | None = row.started_at  # type: ignore[attr-defined]
        self.status: str = row.status  # type: ignore[attr-defined]
        self.node: str = row.node  # type: ignore[attr-defined]
        self.error: str | None = row.error  # type: ignore[attr-defined]


def history(store: PostgresStore) -> list[Run]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(
                schedules.c.name, runs.c.scheduled_for, runs.c.started_at, runs.c.status, runs.c.node, runs.c.error
            ).join(schedules, schedules.c.id == runs.c.schedule_id)
        ).all()
    return [Run(r) for r in rows]


def executions(tmp_path: Path) -> collections.Counter[str]:
    lines = (tmp_path / "fires.txt").read_text().splitlines()
    return collections.Counter(f"c{int(line.split()[0]):02d}" for line in lines)


def ran_share(
    rows: list[Run], names: set[str], lo: datetime, hi: datetime, excused: frozenset[tuple[str, datetime]] = frozenset()
) -> float:
    """Of the fire times of ``names`` in [lo, hi] (every whole second), less ``excused``, the
    share that ran."""
    expected = {(n, lo + timedelta(seconds=s)) for n in names for s in range(int((hi - lo).total_seconds()) + 1)}
    expected -= excused
    done = {(r.name, r.scheduled_for) for r in rows if r.status == "succeeded"}
    return len(expected & done) / len(expected)


def missing(rows: list[Run], names: set[str], lo: datetime, hi: datetime) -> str:
    """The fire times of ``names`` in [lo, hi] that did not run, with what the history says of them."""
    known = {(r.name, r.scheduled_for): r for r in rows}
    lines = []
    for n in sorted(names):
        for s in range(int((hi - lo).total_seconds()) + 1):
            at = lo + timedelta(seconds=s)
            r = known.get((n, at))
            if r is None or r.status != "succeeded":
                what = "no row" if r is None else f"{r.status} on {r.node}: {(r.error or '')[:90]}"
                lines.append(f"{n} {at.time()} {what}")
    return "\n".join(lines)


def whole_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)
