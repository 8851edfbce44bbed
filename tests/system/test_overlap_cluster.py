"""``overlap`` on real nodes: two hashring node processes on PostgreSQL, every-second schedules.

- ``buffer_one`` with a job taking 2.5 s: its runs follow one another back to back (each next
  run is a fire that came due while the previous one ran, started after it ended), the other
  fire times are recorded ``skipped`` naming buffer_one, and no fire time is missing.
- ``cancel_other`` in process mode: every run is stopped when the next fire comes (its child
  process killed: it never writes its end), recorded ``cancelled``, and the new fire starts.

Judged from the history table and from the lines the jobs write."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from tests.support.cluster import node_config
from tests.support.local_helpers import wait_gone
from tests.support.paths import REPO
from tickwork import schedules as admin
from tickwork.sql.schema import runs, schedules
from tickwork.structures import ScheduleSpec, parse_iso
from tickwork_postgres.store import PostgresStore

RUN_FOR = 16.0

pytestmark = pytest.mark.slow


#: How far a run's recorded end (the node's lower-bound estimate of the database clock) may
#: trail the database clock.
END_ESTIMATE_SLACK = timedelta(milliseconds=50)


def every_second(name: str, **options: Any) -> ScheduleSpec:
    return ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * * *", **options)


def history(store: PostgresStore, name: str) -> list[Any]:
    with store.engine.connect() as conn:
        return list(
            conn.execute(
                select(runs.c.scheduled_for, runs.c.started_at, runs.c.finished_at, runs.c.status, runs.c.error)
                .join(schedules, runs.c.schedule_id == schedules.c.id)
                .where(schedules.c.name == name)
                .order_by(runs.c.scheduled_for, runs.c.attempt)
            ).all()
        )


def lines(path: Path) -> list[tuple[str, str, datetime, int]]:
    """(start|end, schedule, fire time, pid) of every line the jobs wrote, in order."""
    out = []
    for line in path.read_text().splitlines():
        what, name, fire, pid = line.split()
        out.append((what, name, datetime.fromisoformat(fire), int(pid)))
    return out


def test_buffer_one_and_cancel_other_on_two_real_nodes(tmp_path: Path, postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    admin.add(
        store,
        every_second(
            "buffered",
            target="tests.support.overlap_jobs:busy",
            arguments={"seconds": 2.5},
            timeout=timedelta(seconds=10),
            overlap="buffer_one",
        ),
    )
    admin.add(
        store,
        every_second(
            "replaced",
            target="tests.support.overlap_jobs:busy",
            arguments={"seconds": 30, "_tickwork_mode": "process"},
            timeout=timedelta(seconds=60),
            overlap="cancel_other",
        ),
    )
    procs = []
    for node in ("n1", "n2"):
        env = dict(os.environ, OVERLAP_FIRES=str(tmp_path / "fires.txt"))
        log = (tmp_path / f"{node}.log").open("ab")
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tickwork.cli",
                    "run",
                    "--config",
                    str(node_config(tmp_path, postgres_url, node)),
                    "--for",
                    f"{RUN_FOR:.1f}",
                ],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
    for p in procs:
        p.wait(timeout=RUN_FOR + 60)
    logs = "\n".join(f.read_text(errors="replace")[-3000:] for f in sorted(tmp_path.glob("n*.log")))
    assert all(p.returncode == 0 for p in procs), logs
    written = lines(tmp_path / "fires.txt")

    # -- buffer_one ---------------------------------------------------------------------------
    rows = history(store, "buffered")
    ran = [r for r in rows if r.status == "succeeded"]
    assert len(ran) >= 3, (rows, logs)
    for before, after in itertools.pairwise(ran):
        # Back to back: the next run is a fire that came due while the previous one ran, and it
        # started only after that one ended.
        assert before.started_at < after.scheduled_for <= before.finished_at, (before, after)
        assert after.started_at >= before.finished_at, (before, after)
    first, last = ran[0].scheduled_for, ran[-1].scheduled_for
    between = [r for r in rows if first < r.scheduled_for < last]
    # Every fire time between the first and the last run has its row: run, or skipped saying why.
    seconds = int((last - first).total_seconds())
    assert sorted(r.scheduled_for for r in between) == [first + timedelta(seconds=s) for s in range(1, seconds)]
    skipped = [r for r in between if r.status == "skipped"]
    assert skipped and all("overlap buffer_one: only the latest due fire" in (r.error or "") for r in skipped)
    assert all(r.status in ("succeeded", "skipped") for r in between)
    # What the job saw: its runs never overlapped (each start follows the previous one's end).
    mine = [(what, fire) for what, name, fire, _ in written if name == "buffered"]
    assert [what for what, _ in mine[: 2 * len(ran)]] == ["start", "end"] * len(ran)

    # -- cancel_other in process mode ---------------------------------------------------------
    rows = history(store, "replaced")
    cancelled = [r for r in rows if r.status == "cancelled"]
    assert len(cancelled) >= 5, (rows, logs)
    stopped_by: dict[datetime, datetime] = {}
    for r in cancelled:
        match = re.fullmatch(
            r"cancelled: the next fire \((\S+)\) came due while it ran \(overlap cancel_other\)", r.error
        )
        assert match, r
        stopped_by[r.scheduled_for] = due = parse_iso(match[1])
        # Stopped by a fire that came due while it ran: when (not before) that fire came, by the
        # database clock. The recorded end is the node's estimate of that clock, a lower bound
        # that can trail it by a round trip (5 ms seen on a loaded CI machine).
        assert due > r.started_at and r.finished_at >= due - END_ESTIMATE_SLACK, r
    by_fire = {r.scheduled_for: r for r in rows}
    for fire, due in stopped_by.items():
        successor = by_fire.get(due)
        if successor is not None and successor.status != "skipped":
            # The new fire started, and only once the old run was stopped.
            assert successor.started_at >= by_fire[fire].finished_at, (by_fire[fire], successor)
    # Every fire not run says why: passed over for the latest one (a run started late on a busy
    # machine lets a fire pass before it started).
    skipped = [r for r in rows if r.status == "skipped"]
    assert all("overlap cancel_other: only the latest due fire" in (r.error or "") for r in skipped), skipped
    starts = {fire: pid for what, name, fire, pid in written if what == "start" and name == "replaced"}
    ends = {fire for what, name, fire, _ in written if what == "end" and name == "replaced"}
    # Killed: no cancelled run's child wrote its end; those whose job had started are gone. (A run
    # may be stopped before its child got to the job: the first child process starts slowly.)
    assert not [r for r in cancelled if r.scheduled_for in ends]
    killed = [starts[r.scheduled_for] for r in cancelled if r.scheduled_for in starts]
    assert len(killed) >= 3, (rows, written)
    for pid in killed:
        assert wait_gone(pid), f"child {pid} outlived its cancel"
    assert not [r for r in rows if r.status == "running"]
    store.close()
