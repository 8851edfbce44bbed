"""``on_abandon = "rerun"`` on real nodes: two hashring node processes on PostgreSQL. Node n1
runs two long jobs, one of a ``rerun`` schedule and one of a ``skip`` schedule; n1 is killed with
SIGKILL mid-run. n2 declares it dead and runs the ``rerun`` fire once more, as attempt 2 with the
same fire time; the ``skip`` fire stays abandoned. Judged from the history table and the file
every execution appends to (its fire time, attempt and process)."""

from __future__ import annotations

import collections
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.cluster import QUICK_REAP, node_config, start_node
from tickwork import schedules as admin
from tickwork.sql.schema import nodes, runs, schedules
from tickwork.structures import ScheduleSpec
from tickwork_postgres.store import PostgresStore

pytestmark = pytest.mark.slow

#: Longest wait for any one step (a node's start, the dead node's release, the rerun), in seconds.
STEP = 60.0


def yearly(name: str, n: int, **options: object) -> ScheduleSpec:
    """Fires only when made due (``fire_now``) within the test."""
    return ScheduleSpec(
        name=name,
        trigger_kind="cron",
        expression="0 0 1 1 *",
        target="tests.support.cluster_jobs:long_first_attempt",
        arguments={"n": n},
        timeout=timedelta(seconds=90),
        **options,  # type: ignore[arg-type]
    )


def wait_until(what: str, check: Callable[[], bool], logs: Callable[[], str]) -> None:
    deadline = time.monotonic() + STEP
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{logs()[-4000:]}"
        time.sleep(0.2)


def history(store: PostgresStore) -> list[tuple[str, int, str, str | None, object]]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(schedules.c.name, runs.c.attempt, runs.c.status, runs.c.node, runs.c.scheduled_for)
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .order_by(schedules.c.name, runs.c.attempt)
        ).all()
    return [(r.name, r.attempt, r.status, r.node, r.scheduled_for) for r in rows]


def live_nodes(store: PostgresStore) -> set[str]:
    with store.engine.connect() as conn:
        return set(conn.scalars(select(nodes.c.id)))


def test_a_fire_killed_mid_run_runs_again_once_on_the_other_node(tmp_path: Path, postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    admin.add(store, yearly("nightly-report", 1, on_abandon="rerun", misfire_grace=timedelta(minutes=5)))
    admin.add(store, yearly("charge-cards", 2))  # on_abandon = "skip", the default
    fires = tmp_path / "fires.txt"
    fires.touch()

    def logs() -> str:
        return "\n".join(f"--- {f.name}\n" + f.read_text(errors="replace") for f in sorted(tmp_path.glob("n*.log")))

    n1 = start_node(
        node_config(tmp_path, postgres_url, "n1", scheduler=QUICK_REAP, store={"claim": "skip-locked"}),
        fires,
        300,
        tmp_path / "n1.log",
    )
    n2: subprocess.Popen[bytes] | None = None
    try:
        wait_until("n1 to join", lambda: "n1" in live_nodes(store), logs)
        for name in ("nightly-report", "charge-cards"):
            store.fire_now(name)
        wait_until(
            "n1 to start both jobs",
            lambda: len([line for line in fires.read_text().splitlines() if line]) == 2,
            logs,
        )
        n2 = start_node(
            node_config(tmp_path, postgres_url, "n2", scheduler=QUICK_REAP, store={"claim": "skip-locked"}),
            fires,
            300,
            tmp_path / "n2.log",
        )
        wait_until("n2 to join", lambda: "n2" in live_nodes(store), logs)
        n1.send_signal(signal.SIGKILL)
        n1.wait(timeout=30)

        def rerun_ended() -> bool:
            return any(r[0] == "nightly-report" and r[1] == 2 and r[2] != "running" for r in history(store))

        wait_until("the rerun to end on n2", rerun_ended, logs)
        # Long enough for any second rerun or a rerun of the skip schedule to show.
        time.sleep(3.0)
        n2.send_signal(signal.SIGTERM)
        assert n2.wait(timeout=60) == 0, logs()[-4000:]
    finally:
        for proc in (n1, n2):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)

    rows = history(store)
    report = [r for r in rows if r[0] == "nightly-report"]
    cards = [r for r in rows if r[0] == "charge-cards"]
    fire_time = report[0][4]
    assert [(a, s, n) for _, a, s, n, _ in report] == [(1, "abandoned", "n1"), (2, "succeeded", "n2")], logs()[-4000:]
    assert all(r[4] == fire_time for r in report)
    assert [(a, s, n) for _, a, s, n, _ in cards] == [(1, "abandoned", "n1")], logs()[-4000:]

    # What ran: the report's fire twice (attempt 1 in n1's process, attempt 2 in n2's, the same
    # fire time), the charge once.
    lines = [line.split() for line in fires.read_text().splitlines() if line]
    per_job = collections.Counter(line[0] for line in lines)
    assert per_job == {"1": 2, "2": 1}, lines
    report_runs = sorted((int(line[3]), line[1], line[2]) for line in lines if line[0] == "1")
    assert [attempt for attempt, _, _ in report_runs] == [1, 2]
    assert report_runs[0][1] == str(n1.pid) and report_runs[1][1] == str(n2.pid if n2 else None)
    assert report_runs[0][2] == report_runs[1][2] == fire_time.isoformat()

    # Both moved on: neither fire is due again.
    for name in ("nightly-report", "charge-cards"):
        schedule = store.get(name)
        assert schedule.next_fire is not None and schedule.next_fire > fire_time + timedelta(days=1)
    assert "running it again as attempt 2" in (tmp_path / "n2.log").read_text()
    store.close()
