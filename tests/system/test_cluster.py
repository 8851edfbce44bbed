"""Exactly once under crashes: three real node processes on real PostgreSQL, 50 schedules firing
every second; one node is killed with SIGKILL (then restarted), or the database is restarted.
Everything is judged from the history table and from a file each execution appends to."""

from __future__ import annotations

import collections
import itertools
import os
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.cluster import QUICK_REAP, node_config, seed, start_node
from tests.support.servers.postgres import POSTGRES
from tickwork.sql.schema import runs, schedules
from tickwork_postgres.store import PostgresStore

SCHEDULES = 50
DURATION = 30.0
#: Ring reaction (node_ttl 4 s + heartbeat 1 s) plus one fire interval and a margin for 2 busy cores.
RESUME_BOUND = 9.0
#: A database restart: 3 s down plus the server's start (1-2 s here), plus the engine's store-error
#: back-off (at most 0.5 s since the passes probe the database that often; it was 0.5 s doubling,
#: up to 4 s late), plus one fire interval and the same margin. A 10 s gap was seen once in CI
#: under the old bound of 9 s, which did not count the back-off; kept at 12 s for loaded machines.
RESTART_RESUME_BOUND = 12.0

pytestmark = pytest.mark.slow


def run_cluster(
    tmp_path: Path, url: str, disrupt: Callable[[list[subprocess.Popen[bytes]], float], None]
) -> tuple[PostgresStore, Path, datetime]:
    store = seed(url, SCHEDULES)
    fires = tmp_path / "fires.txt"
    fires.touch()
    configs = [
        node_config(tmp_path, url, f"n{i}", scheduler=QUICK_REAP, store={"claim": "skip-locked"}) for i in (1, 2, 3)
    ]
    started = time.monotonic()
    procs = [start_node(c, fires, DURATION, tmp_path / f"n{i}.log") for i, c in enumerate(configs, 1)]
    disrupt(procs, started)
    for p in procs:
        p.wait(timeout=DURATION + 60)
    logs = "\n".join(f.read_text(errors="replace")[-3000:] for f in sorted(tmp_path.glob("n*.log")))
    assert all(p.returncode in (0, -signal.SIGKILL) for p in procs), logs
    return store, fires, store.now()


def check_history(
    store: PostgresStore, fires: Path, disrupted: tuple[datetime, datetime], resume_bound: float = RESUME_BOUND
) -> None:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(
                schedules.c.name, runs.c.scheduled_for, runs.c.status, runs.c.attempt, runs.c.node, runs.c.error
            ).join(schedules, schedules.c.id == runs.c.schedule_id)
        ).all()
    assert rows, "nothing ran"
    per_fire = collections.Counter((r.name, r.scheduled_for) for r in rows)
    assert max(per_fire.values()) == 1, "a (schedule, fire time) ran twice"

    executed = collections.Counter(f"c{int(line.split()[0]):02d}" for line in fires.read_text().splitlines())
    status = collections.defaultdict(collections.Counter)
    for r in rows:
        status[r.name][r.status] += 1
    for name, counts in status.items():
        # A run killed mid-way may have executed without its end being recorded, never the reverse.
        assert counts["succeeded"] <= executed[name] <= counts["succeeded"] + counts["abandoned"] + counts["timed_out"]

    # The nodes share the work: a node that ran nothing means the quickest owner takes every fire.
    by_node = collections.Counter(r.node for r in rows if r.status == "succeeded")
    assert set(by_node) == {"n1", "n2", "n3"} and min(by_node.values()) >= 0.03 * len(rows), by_node

    lo, hi = disrupted
    for name in status:
        times = sorted(r.scheduled_for for r in rows if r.name == name)
        gaps = [b - a for a, b in itertools.pairwise(times) if b - a != timedelta(seconds=1)]
        assert not gaps, f"{name}: fire times silently lost (gaps {gaps[:3]})"
        ran = sorted(r.scheduled_for for r in rows if r.name == name and r.status == "succeeded")
        worst = max(b - a for a, b in itertools.pairwise(ran))
        assert worst <= timedelta(seconds=resume_bound), f"{name} did not resume for {worst}"
        for r in rows:
            # Before a schedule's first run no node was up yet: start-up skips are expected. A fire
            # that comes due while the previous one is still pending or running is skipped by
            # policy (FTL), whenever a loaded machine delays a run past the next second.
            reason = r.error or ""
            by_policy = r.status == "skipped" and ("still active" in reason or "before the previous fire" in reason)
            if r.name == name and r.status != "succeeded" and r.scheduled_for > ran[0] and not by_policy:
                assert lo <= r.scheduled_for <= hi, (
                    f"{name}: {r.status} at {r.scheduled_for} outside the disruption {lo}..{hi}: {r.node} {r.error}"
                )


def test_kill_9_a_node_and_restart_it(postgres_url: str, tmp_path: Path) -> None:
    marks: dict[str, datetime] = {}

    def disrupt(procs: list[subprocess.Popen[bytes]], started: float) -> None:
        time.sleep(max(0.0, started + 10 - time.monotonic()))
        store = PostgresStore(postgres_url)
        store.open()
        marks["kill"] = store.now()
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait()
        time.sleep(max(0.0, started + 18 - time.monotonic()))
        marks["restart"] = store.now()
        store.close()
        remaining = DURATION - (time.monotonic() - started)
        procs[1] = start_node(
            node_config(tmp_path, postgres_url, "n2", scheduler=QUICK_REAP, store={"claim": "skip-locked"}),
            tmp_path / "fires.txt",
            remaining,
            tmp_path / "n2.log",
        )

    store, fires, _ = run_cluster(tmp_path, postgres_url, disrupt)
    try:
        check_history(
            store, fires, (marks["kill"] - timedelta(seconds=1), marks["kill"] + timedelta(seconds=RESUME_BOUND))
        )
    finally:
        store.close()


def test_database_restart_mid_run(tmp_path: Path) -> None:
    server = POSTGRES.start_throwaway(os.environ)
    assert server.throwaway is not None
    try:
        import psycopg

        with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE cluster")
        url = server.url("cluster")
        marks: dict[str, datetime] = {}

        def disrupt(procs: list[subprocess.Popen[bytes]], started: float) -> None:
            time.sleep(max(0.0, started + 10 - time.monotonic()))
            store = PostgresStore(url)
            store.open()
            marks["down"] = store.now()
            store.close()
            assert server.throwaway is not None
            server.throwaway.restart(down_seconds=3.0)

        store, fires, _ = run_cluster(tmp_path, url, disrupt)
        try:
            disrupted = (marks["down"] - timedelta(seconds=1), marks["down"] + timedelta(seconds=20))
            check_history(store, fires, disrupted, resume_bound=RESTART_RESUME_BOUND)
        finally:
            store.close()
    finally:
        server.throwaway.stop()
