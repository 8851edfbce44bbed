"""Concurrent runs on two real hashring nodes over PostgreSQL (docs/triggers.md#overlap):
``overlap = "allow"`` with ``max_concurrent = 3`` and 5 s jobs every second never has more than 3
runs at once across both nodes, measured from the history's start and end times, and every fire
time is in the history once (run, or skipped with the reason); two schedules sharing a
concurrency key with limit 1 never overlap; the run of a node killed mid-run (``kill -9``) stops
counting once the survivor declares the node dead and records the run abandoned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.cluster import node_config
from tests.support.concurrentruns import every_second, most_at_once, ran
from tests.support.paths import REPO
from tickwork import schedules as admin
from tickwork.structures import RunRecord, RunStatus
from tickwork_postgres.store import PostgresStore

RUN_FOR = 16.0

pytestmark = pytest.mark.slow


def test_max_concurrent_and_a_concurrency_key_across_two_nodes(tmp_path: Path, postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    admin.add(store, every_second("wide", 1, 5.0, overlap="allow", max_concurrent=3))
    admin.add(store, every_second("bill-a", 2, 1.5, concurrency_key="billing"))
    admin.add(store, every_second("bill-b", 3, 1.5, concurrency_key="billing"))
    fires = tmp_path / "fires.txt"
    fires.touch()
    env = dict(os.environ, CLUSTER_FIRES=str(fires))
    procs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "tickwork.cli", "run", "--for", f"{RUN_FOR:.1f}"),
                *("--config", str(node_config(tmp_path, postgres_url, node))),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for node in ("n1", "n2")
    ]
    outputs = [p.communicate(timeout=RUN_FOR + 60)[0] for p in procs]
    for p, out in zip(procs, outputs, strict=True):
        assert p.returncode == 0, out[-3000:]
    end = store.now()
    history = store.history(limit=10_000)
    by_name: dict[str, list[RunRecord]] = {}
    for r in history:
        by_name.setdefault(r.schedule, []).append(r)

    # Each fire time once in the history (invariant 1) and each job executed once per fire.
    assert {r.attempt for r in history} == {1}
    for name, runs in by_name.items():
        times = Counter(r.scheduled_for for r in runs)
        assert max(times.values()) == 1, (name, times.most_common(3))
    lines = fires.read_text().splitlines()
    executed = Counter(line.split(" ", 1)[1] for line in lines)
    assert max(executed.values()) == 1, executed.most_common(3)
    assert len(lines) == len(ran(history))

    # allow + max_concurrent 3: runs overlap, never more than 3, across both nodes.
    wide = by_name["wide"]
    # Both owners ran it (they take turns claiming): the bound below holds across nodes.
    assert {r.node for r in ran(wide)} == {"n1", "n2"}
    assert most_at_once(ran(wide), end) == 3
    # Every second from the first fire to the last is there: run, or skipped saying why.
    times = sorted(r.scheduled_for for r in wide)
    assert times == [times[0] + timedelta(seconds=i) for i in range(len(times))]
    reasons = Counter(r.error for r in wide if r.status is RunStatus.SKIPPED)
    assert reasons["max_concurrent 3 reached"] >= 5, reasons
    assert len([r for r in wide if r.status is RunStatus.SUCCEEDED]) >= 3

    # A concurrency key with limit 1: the two schedules never run at once.
    billing = ran(by_name["bill-a"]) + ran(by_name["bill-b"])
    assert most_at_once(billing, end) == 1
    assert len([r for r in billing if r.status is RunStatus.SUCCEEDED]) >= 4
    keyed = Counter(r.error for r in by_name["bill-a"] + by_name["bill-b"] if r.status is RunStatus.SKIPPED)
    assert keyed["concurrency key billing at its limit 1"] >= 3, keyed
    store.close()


def test_a_killed_nodes_run_stops_counting_once_it_is_declared_dead(tmp_path: Path, postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    admin.add(store, every_second("one", 4, 6.0, overlap="allow", max_concurrent=1))
    fires = tmp_path / "fires.txt"
    fires.touch()
    env = dict(os.environ, CLUSTER_FIRES=str(fires))
    procs = {
        node: subprocess.Popen(
            [
                *(sys.executable, "-m", "tickwork.cli", "run", "--for", f"{RUN_FOR:.1f}"),
                *("--config", str(node_config(tmp_path, postgres_url, node))),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for node in ("n1", "n2")
    }
    # The node running the schedule's first run (either owner may win it) is killed mid-run.
    # The job's own line names the run that executes: the history alone cannot, for a fire
    # claimed ahead of its time is ``running`` there too until its admission refuses it.
    deadline = time.monotonic() + 30
    lines: list[str] = []
    while not lines and time.monotonic() < deadline:
        lines = fires.read_text().splitlines()
        time.sleep(0.1)
    assert lines, "no run started"
    run_id = int(lines[0].split()[-1])
    [first] = [r for r in store.history(schedule="one", limit=100) if r.id == run_id]
    assert first.status is RunStatus.RUNNING
    assert first.node is not None
    procs[first.node].send_signal(signal.SIGKILL)
    survivor = procs[survivor_id(first.node)]
    assert survivor.wait(timeout=RUN_FOR + 60) == 0
    procs[first.node].wait(timeout=10)
    end = store.now()
    runs = store.history(schedule="one", limit=1000)
    [lost] = [r for r in runs if r.id == first.id]
    # The dead node's run: abandoned by the survivor's dead-node release, and no longer counted.
    assert lost.status is RunStatus.ABANDONED and lost.finished_at is not None
    # A fire whose start the killed node had recorded ahead of its time (start_lead) and not yet
    # run is abandoned with it: it never executed (no line of its own), and counts nowhere.
    executed = {int(line.split()[-1]) for line in fires.read_text().splitlines()}
    unrun = [r for r in ran(runs) if r.id != first.id and r.node == first.node]
    assert all(r.status is RunStatus.ABANDONED and r.id not in executed for r in unrun), unrun
    counted = [r for r in ran(runs) if r not in unrun]
    later = [r for r in counted if r.id != first.id]
    assert later and {r.node for r in later} == {survivor_id(first.node)}
    assert all(r.started_at is not None and r.started_at >= lost.finished_at for r in later)
    assert most_at_once(counted, end) == 1
    reasons = Counter(r.error for r in runs if r.status is RunStatus.SKIPPED)
    assert reasons["max_concurrent 1 reached"] >= 3, reasons
    store.close()


def survivor_id(killed: str) -> str:
    return "n2" if killed == "n1" else "n1"
