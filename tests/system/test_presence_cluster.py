"""Presence on real node processes (docs/cluster.md#when-a-node-dies): two hashring nodes on
PostgreSQL and on MariaDB, with a node_ttl of 60 s so that only presence can release a node within
the test. A node killed mid-run (``kill -9``) is released by the survivor, its run recorded
``abandoned`` saying its database session ended, and the schedule runs on there; a node frozen
(SIGSTOP) for 5 s keeps its session, so it is not released, and its run ends as it would have."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tickwork import schedules as admin
from tickwork.sql.store import SQLStore
from tickwork.structures import RunRecord, RunStatus, ScheduleSpec
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.store import PostgresStore

NODE_TTL = 60.0

pytestmark = pytest.mark.slow


@pytest.fixture(params=["postgres", "mysql"])
def server(request: pytest.FixtureRequest) -> tuple[str, str]:
    """The store plugin and the URL of a fresh database on its server."""
    return request.param, request.getfixturevalue(f"{request.param}_url")


def open_store(plugin: str, url: str) -> SQLStore:
    store: SQLStore = PostgresStore(url) if plugin == "postgres" else MySQLStore(url)
    store.upgrade()
    store.open()
    return store


def start(tmp_path: Path, plugin: str, url: str, node: str) -> subprocess.Popen[bytes]:
    config = tmp_path / f"{node}.toml"
    config.write_text(
        f'[scheduler]\nnode_id = "{node}"\n[store]\nplugin = "{plugin}"\nurl = "{url}"\n'
        f'[membership]\nplugin = "hashring"\nheartbeat_interval = 1.0\nnode_ttl = {NODE_TTL}\n'
    )
    with (tmp_path / f"{node}.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tickwork.cli", "run", "--config", str(config), "--for", "60"],
            cwd=REPO,
            env=dict(os.environ, CLUSTER_FIRES=str(tmp_path / "fires.txt")),
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def first_run(store: SQLStore, tmp_path: Path) -> RunRecord:
    """The run the job says is executing (its line names the run)."""
    deadline = time.monotonic() + 40
    ran: list[int] = []
    while not ran and time.monotonic() < deadline:
        ran = executed(tmp_path)
        time.sleep(0.1)
    assert ran, "no run started"
    run_id = ran[0]
    [run] = [r for r in store.history(schedule="long", limit=100) if r.id == run_id]
    assert run.status is RunStatus.RUNNING and run.node is not None
    return run


def once_ended(store: SQLStore, run: RunRecord, seconds: float) -> RunRecord:
    """``run`` as the history has it once it is no longer running (or after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while run.status is RunStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.2)
        [run] = [r for r in store.history(schedule="long", limit=100) if r.id == run.id]
    return run


def executed(tmp_path: Path) -> list[int]:
    """The ids of the runs that executed, in order (the job's lines)."""
    return [int(line.split()[-1]) for line in (tmp_path / "fires.txt").read_text().splitlines()]


def cluster(
    tmp_path: Path, plugin: str, url: str, seconds: float
) -> tuple[SQLStore, dict[str, subprocess.Popen[bytes]]]:
    store = open_store(plugin, url)
    admin.add(
        store,
        ScheduleSpec(
            name="long",
            trigger_kind="cron",
            expression="* * * * * *",
            target="tests.support.cluster_jobs:lasting",
            arguments={"n": 1, "seconds": seconds},
            timeout=timedelta(seconds=120),
        ),
    )
    (tmp_path / "fires.txt").touch()
    return store, {node: start(tmp_path, plugin, url, node) for node in ("n1", "n2")}


def stop(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
    for proc in procs.values():
        proc.wait(timeout=30)


def test_a_killed_node_is_released_once_its_session_ends(server: tuple[str, str], tmp_path: Path) -> None:
    plugin, url = server
    store, procs = cluster(tmp_path, plugin, url, seconds=8.0)
    try:
        first = first_run(store, tmp_path)
        assert first.node is not None
        survivor = "n2" if first.node == "n1" else "n1"
        procs[first.node].send_signal(signal.SIGKILL)
        procs[first.node].wait(timeout=10)
        lost = once_ended(store, first, 30)  # half node_ttl: only presence releases it by then
        assert lost.status is RunStatus.ABANDONED, lost
        assert lost.error is not None and "its database session ended" in lost.error, lost.error
        assert [n.id for n in store.nodes()] == [survivor]
        # The schedule runs on, on the survivor, after the release (the job's lines name the runs
        # that executed; their start times are written with their ends, after the stop).
        deadline = time.monotonic() + 15
        while len(executed(tmp_path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        stop(procs)
        assert lost.finished_at is not None
        later = [r for r in store.history(schedule="long", limit=100) if r.id in executed(tmp_path)[1:]]
        assert later and {r.node for r in later} == {survivor}
        assert all(r.started_at is not None and r.started_at >= lost.finished_at for r in later)
        log = (tmp_path / f"{survivor}.log").read_text()
        assert f"node {first.node} is dead (its database session ended" in log, log[-3000:]
    finally:
        stop(procs)
        store.close()


def test_a_frozen_node_keeps_its_session_and_is_not_released(server: tuple[str, str], tmp_path: Path) -> None:
    plugin, url = server
    store, procs = cluster(tmp_path, plugin, url, seconds=8.0)
    try:
        first = first_run(store, tmp_path)
        assert first.node is not None
        survivor = "n2" if first.node == "n1" else "n1"
        procs[first.node].send_signal(signal.SIGSTOP)
        time.sleep(5)  # its heartbeat 5 s old: stale by presence's measure, but its session lives
        assert sorted(n.id for n in store.nodes()) == ["n1", "n2"]
        procs[first.node].send_signal(signal.SIGCONT)
        ended = once_ended(store, first, 20)
        assert ended.status is RunStatus.SUCCEEDED, ended
        stop(procs)
        assert not [r for r in store.history(schedule="long", limit=100) if r.status is RunStatus.ABANDONED]
        assert " is dead (" not in (tmp_path / f"{survivor}.log").read_text()
    finally:
        stop(procs)
        store.close()
