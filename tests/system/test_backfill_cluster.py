"""Backfill on real node processes over PostgreSQL: yesterday's 24 hourly fires run once each,
with distinct fire identities, through the schedule's executor on the node owning it; a second
identical backfill runs none, and ``--rerun`` runs them again as further attempts. By its
``--overlap``, a backfill's fires of a 1 s job run one at a time in fire-time order
(``buffer_all``, the default) or side by side (``allow``), judged from the history's times. A
backfill of 400 fires on two nodes racing for the same schedules' queues, each end taking the
next fire at once, runs every fire exactly once."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.cluster import node_config
from tests.support.paths import REPO
from tickwork import schedules as admin
from tickwork.structures import RunRecord, RunStatus, ScheduleSpec, iso_z
from tickwork_postgres.store import PostgresStore

pytestmark = pytest.mark.slow


def tickwork(cfg: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "tickwork.cli", *args, "--config", str(cfg)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def run_nodes(
    configs: list[Path], env: dict[str, str], seconds: float, until: Callable[[], bool] | None = None
) -> None:
    """Run the nodes for ``seconds``, or (with ``until``) until it holds, stopping them then
    with SIGTERM (their running jobs end first): a loaded machine starts nodes slowly."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tickwork.cli", "run", "--config", str(c), "--for", f"{seconds:.1f}"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for c in configs
    ]
    if until is not None:
        deadline = time.monotonic() + seconds
        while not until() and time.monotonic() < deadline:
            time.sleep(0.2)
        for p in procs:
            p.terminate()
    for p in procs:
        assert p.wait(timeout=seconds + 60) == 0


def test_backfill_runs_yesterdays_fires_once(tmp_path: Path, postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    # Hourly: none of its own fires falls within the test; only the backfill runs it.
    admin.add(
        store,
        ScheduleSpec(
            name="hourly",
            trigger_kind="cron",
            expression="0 * * * *",
            target="tests.support.cluster_jobs:work",
            arguments={"n": 7},
        ),
    )
    today = store.now().replace(hour=0, minute=0, second=0, microsecond=0)
    yesterday = today - timedelta(days=1)
    configs = [node_config(tmp_path, postgres_url, f"n{i}") for i in (1, 2)]
    fires = tmp_path / "fires.txt"
    fires.touch()
    env = dict(os.environ, CLUSTER_FIRES=str(fires))
    window = ("--from", iso_z(yesterday), "--to", iso_z(today))

    dry = json.loads(tickwork(configs[0], "--json", "jobs", "backfill", "hourly", *window, "--dry-run").stdout)
    assert len(dry["times"]) == 24 and dry["queued"] == dry["times"]

    # allow: this test is about each fire running once, not about their order (below).
    queued = json.loads(
        tickwork(configs[0], "--json", "jobs", "backfill", "hourly", *window, "--overlap", "allow").stdout
    )
    assert queued["queued"] == [iso_z(yesterday + timedelta(hours=h)) for h in range(24)]
    run_nodes(configs, env, 8.0)
    runs = [r for r in store.history(schedule="hourly", limit=1000)]
    assert sorted(r.scheduled_for for r in runs) == [yesterday + timedelta(hours=h) for h in range(24)]
    assert {r.status for r in runs} == {RunStatus.SUCCEEDED} and {r.attempt for r in runs} == {1}
    assert len(fires.read_text().splitlines()) == 24  # each executed once

    # The same backfill again: every fire is in the history, none is queued or run.
    again = json.loads(tickwork(configs[0], "--json", "jobs", "backfill", "hourly", *window).stdout)
    assert again["queued"] == [] and len(again["already"]) == 24
    run_nodes(configs[:1], env, 3.0)
    assert len(store.history(schedule="hourly", limit=1000)) == 24

    # --rerun: two fires again, as their second attempts.
    two = ("--from", iso_z(yesterday), "--to", iso_z(yesterday + timedelta(hours=2)))
    tickwork(configs[0], "jobs", "backfill", "hourly", *two, "--rerun", "--overlap", "allow")
    run_nodes(configs[:1], env, 4.0)
    attempts = Counter(r.attempt for r in store.history(schedule="hourly", limit=1000))
    assert attempts == {1: 24, 2: 2}
    store.close()


def most_at_once(runs: list[RunRecord]) -> int:
    """The most runs running at one moment, from their started/finished times (database clock)."""
    edges = sorted(
        [(r.started_at, 1) for r in runs if r.started_at is not None]
        + [(r.finished_at, -1) for r in runs if r.finished_at is not None],
        key=lambda edge: (edge[0], edge[1]),  # an end before a start at the same instant
    )
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@pytest.mark.parametrize("overlap", ["buffer_all", "allow"])
def test_a_backfills_overlap_decides_whether_its_fires_run_together(
    tmp_path: Path, postgres_url: str, overlap: str
) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    name = f"lasting-{overlap}"
    admin.add(
        store,
        ScheduleSpec(
            name=name,
            trigger_kind="cron",
            expression="0 * * * *",
            target="tests.support.cluster_jobs:lasting",
            arguments={"n": 1, "seconds": 1.0},
        ),
    )
    today = store.now().replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=1)
    configs = [node_config(tmp_path, postgres_url, f"n{i}") for i in (1, 2)]
    fires = tmp_path / "fires.txt"
    fires.touch()
    env = dict(os.environ, CLUSTER_FIRES=str(fires))
    window = ("--from", iso_z(start), "--to", iso_z(start + timedelta(hours=6)))
    args = ["--overlap", overlap] if overlap == "allow" else []  # buffer_all is the default
    queued = json.loads(tickwork(configs[0], "--json", "jobs", "backfill", name, *window, *args).stdout)
    assert queued["overlap"] == overlap and len(queued["queued"]) == 6

    # buffer_all: six 1 s runs one after the other, each started at a backfill pass (every second).
    def all_ended() -> bool:
        ended = [r for r in store.history(schedule=name, limit=100) if r.status is not RunStatus.RUNNING]
        return len(ended) >= 6

    run_nodes(configs, env, 90.0, until=all_ended)
    runs = sorted(store.history(schedule=name, limit=100), key=lambda r: (r.started_at or today, r.id))
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED] * 6
    assert sorted(r.scheduled_for for r in runs) == [start + timedelta(hours=h) for h in range(6)]
    assert len(fires.read_text().splitlines()) == 6  # each executed once
    if overlap == "buffer_all":
        assert most_at_once(runs) == 1
        # In fire-time order: each started after the previous (earlier fire) had finished.
        assert [r.scheduled_for for r in runs] == [start + timedelta(hours=h) for h in range(6)]
        for before, after in itertools.pairwise(runs):
            assert before.finished_at is not None and after.started_at is not None
            assert before.finished_at <= after.started_at
    else:
        assert most_at_once(runs) > 1
    store.close()


def test_a_backfill_of_many_fires_runs_each_once_at_the_engines_pace(tmp_path: Path, postgres_url: str) -> None:
    """Two nodes that both attempt every schedule (hashring, two owners) race for the queue as
    each end starts the next fire: every fire still runs once, and a buffer_all backfill's one
    at a time, in fire-time order."""
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    plan = {"buffered-1": ("buffer_all", 100), "buffered-2": ("buffer_all", 100), "allowed": ("allow", 200)}
    for n, name in enumerate(plan):
        target = "tests.support.cluster_jobs:work"
        admin.add(
            store,
            ScheduleSpec(name=name, trigger_kind="cron", expression="0 * * * *", target=target, arguments={"n": n}),
        )
    end = store.now().replace(hour=0, minute=0, second=0, microsecond=0)
    configs = [node_config(tmp_path, postgres_url, f"n{i}") for i in (1, 2)]
    fires = tmp_path / "fires.txt"
    fires.touch()
    env = dict(os.environ, CLUSTER_FIRES=str(fires))
    for name, (overlap, count) in plan.items():
        window = ("--from", iso_z(end - timedelta(hours=count)), "--to", iso_z(end))
        tickwork(configs[0], "jobs", "backfill", name, *window, "--overlap", overlap)

    def backfilled() -> list[RunRecord]:
        return [r for r in store.history(limit=2000) if r.scheduled_for < end]

    run_nodes(configs, env, 120.0, until=lambda: sum(r.status is RunStatus.SUCCEEDED for r in backfilled()) >= 400)
    runs = backfilled()
    assert Counter((r.schedule, r.scheduled_for) for r in runs) == Counter(
        {(name, end - timedelta(hours=h)): 1 for name, (_, count) in plan.items() for h in range(1, count + 1)}
    )
    assert {(r.status, r.attempt) for r in runs} == {(RunStatus.SUCCEEDED, 1)}
    executions = Counter(line.split()[0] for line in fires.read_text().splitlines())
    assert executions == {"0": 100, "1": 100, "2": 200}  # each executed once
    for name in ("buffered-1", "buffered-2"):
        ordered = sorted((r for r in runs if r.schedule == name), key=lambda r: (r.started_at or end, r.id))
        assert most_at_once(ordered) == 1
        assert [r.scheduled_for for r in ordered] == sorted(r.scheduled_for for r in ordered)
    store.close()
