"""Failover without losing fires (docs/claim-protocol.md, fenced starts): real hashring node
processes on real PostgreSQL, 30 schedules firing every second. A node killed at a random phase
of the second loses no fire for good (its fires claimed ahead are taken over and run late; a run
it had started keeps the documented mid-run bound); a
node frozen past node_ttl starts nothing it no longer holds and rejoins; a lock another session
holds on a few schedule rows stalls neither node. Judged from the history table, the file every
execution appends to, and the nodes' logs."""

from __future__ import annotations

import collections
import random
import signal
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.support.cluster import QUICK_REAP, node_config, seed, start_node
from tests.support.failover import SCHEDULES, Run, executions, history, missing, ran_share, whole_second
from tickwork_postgres.store import PostgresStore

DURATION = 32.0

pytestmark = pytest.mark.slow


def cluster(
    tmp_path: Path, url: str, nodes: int, count: int = SCHEDULES, duration: float = DURATION
) -> tuple[PostgresStore, list[subprocess.Popen[bytes]], float]:
    store = seed(url, count)
    (tmp_path / "fires.txt").touch()
    configs = [
        node_config(tmp_path, url, f"n{i}", scheduler=QUICK_REAP, store={"claim": "skip-locked"})
        for i in range(1, nodes + 1)
    ]
    started = time.monotonic()
    procs = [start_node(c, tmp_path / "fires.txt", duration, tmp_path / f"n{i}.log") for i, c in enumerate(configs, 1)]
    return store, procs, started


def warnings(logs: str) -> str:
    """The WARNING and ERROR lines of the nodes' logs."""
    return "\n".join(line for line in logs.splitlines() if " WARNING " in line or " ERROR " in line)[-6000:]


def wait_for(procs: list[subprocess.Popen[bytes]], tmp_path: Path) -> str:
    for p in procs:
        p.wait(timeout=DURATION + 60)
    logs = "\n".join(f"--- {f.name}\n" + f.read_text(errors="replace") for f in sorted(tmp_path.glob("n*.log")))
    assert all(p.returncode in (0, -signal.SIGKILL) for p in procs), logs[-6000:]
    return logs


def check_exactly_once(rows: list[Run], tmp_path: Path) -> None:
    """No fire time recorded twice, none started early, none executed twice."""
    per_fire = collections.Counter((r.name, r.scheduled_for) for r in rows)
    assert max(per_fire.values()) == 1, "a (schedule, fire time) was recorded twice"
    early = [r for r in rows if r.started_at is not None and r.started_at < r.scheduled_for]
    assert not early, f"started before its time: {[(r.name, r.scheduled_for, r.started_at) for r in early[:3]]}"
    ran = executions(tmp_path)
    for name in {r.name for r in rows}:
        succeeded = sum(1 for r in rows if r.name == name and r.status == "succeeded")
        cut_off = sum(1 for r in rows if r.name == name and r.status in ("abandoned", "timed_out"))
        # A run killed mid-way may have executed without its end being recorded, never the reverse.
        assert succeeded <= ran[name] <= succeeded + cut_off, (name, succeeded, cut_off, ran[name])


#: A run cut off by a kill holds its schedule until the dead node is released: node_ttl (4 s) +
#: heartbeat_interval (1 s), plus a fire interval (docs/claim-protocol.md, bounds).
CUT_OFF_BOUND = 6


def cut_off(rows: list[Run], node: str) -> frozenset[tuple[str, datetime]]:
    """The fire times the documented bound for a run cut off mid-run (or with its end not yet
    written) lets go: each ``abandoned`` run of ``node`` and its schedule's next fires within
    :data:`CUT_OFF_BOUND` seconds. Fires the node had only claimed ahead are not among them:
    those are taken over and run."""
    return frozenset(
        (r.name, r.scheduled_for + timedelta(seconds=s))
        for r in rows
        if r.node == node and r.status == "abandoned"
        for s in range(CUT_OFF_BOUND + 1)
    )


def test_kill_9_at_a_random_phase_loses_no_fire(postgres_url: str, tmp_path: Path) -> None:
    store, procs, started = cluster(tmp_path, postgres_url, 3)
    try:
        # Mid-run, at a random phase of the second: whatever the victim held (fires claimed
        # ahead, runs going, ends not yet written) is in every state over the trials.
        time.sleep(max(0.0, started + 12 + random.random() - time.monotonic()))
        killed_at = store.now()
        procs[1].send_signal(signal.SIGKILL)
        wait_for(procs, tmp_path)
        end = store.now()
        rows = history(store)
        check_exactly_once(rows, tmp_path)
        names = {f"c{i:02d}" for i in range(SCHEDULES)}
        # From a few seconds before the kill (the nodes' start-up, 3-5 s on a busy machine, skips
        # the fires due before the first claim by the misfire policy).
        lo = whole_second(killed_at) - timedelta(seconds=4)
        hi = whole_second(end) - timedelta(seconds=3)
        # A kill within ~0.15 s after the second cuts off the victim's runs in flight or with
        # their ends not yet written: those schedules keep the documented mid-run bound.
        excused = cut_off(rows, "n2")
        assert len({name for name, _ in excused}) <= 15  # at most the victim's share of the runs
        share = ran_share(rows, names, lo, hi, excused)
        gone = missing(rows, names, lo, hi)
        assert share >= 0.98, f"{share:.1%} of the fires from {lo} to {hi} ran (killed at {killed_at}):\n{gone}"
        # The victim's schedules run on after its death (the other owners take over within ~1 s
        # of node_ttl for a run cut off, at once for the rest).
        after = whole_second(killed_at) + timedelta(seconds=7)
        assert ran_share(rows, names, after, hi) >= 0.99, missing(rows, names, after, hi)
    finally:
        store.close()


def test_a_frozen_node_starts_nothing_it_no_longer_holds_and_rejoins(postgres_url: str, tmp_path: Path) -> None:
    store, procs, started = cluster(tmp_path, postgres_url, 3)
    try:
        time.sleep(max(0.0, started + 10 + random.random() - time.monotonic()))
        frozen_at = store.now()
        procs[1].send_signal(signal.SIGSTOP)
        time.sleep(6.0)
        resumed_at = store.now()
        procs[1].send_signal(signal.SIGCONT)
        logs = wait_for(procs, tmp_path)
        rows = history(store)
        check_exactly_once(rows, tmp_path)
        # Frozen, n2 started nothing; resumed, it started none of the fires it had held (the
        # others took them over or released them as dead): no run of n2 is due in the freeze.
        # A run it had started before the freeze may end late; it is recorded as n2's then.
        late = [
            r
            for r in rows
            if r.node == "n2"
            and frozen_at + timedelta(seconds=0.2) < r.scheduled_for < resumed_at
            and r.started_at is not None
            and r.started_at > frozen_at + timedelta(seconds=0.2)
        ]
        assert not late, [(r.name, r.scheduled_for, r.started_at, r.status) for r in late]
        n2_log = (tmp_path / "n2.log").read_text(errors="replace")
        assert "was declared dead by the other nodes" in n2_log, logs[-4000:]
        # It rejoined: it runs fires again, and shares them with the others.
        assert any(
            r.node == "n2" and r.status == "succeeded" and r.scheduled_for > resumed_at + timedelta(seconds=6)
            for r in rows
        )
        names = {f"c{i:02d}" for i in range(SCHEDULES)}
        share = ran_share(
            rows, names, whole_second(frozen_at) - timedelta(seconds=4), whole_second(frozen_at) + timedelta(seconds=14)
        )
        # The bar of this check is safety (above: nothing started after release, nothing twice).
        # This guards against a stall of the others: the frozen node's fires that had started are
        # lost by the documented mid-run bound, and the parallel suite loads the machine (93 %
        # seen there, against 14 s of silence, about 25 %, for a stalled cluster).
        assert share >= 0.85, f"{share:.1%} of the fires around the freeze ran\n{logs[-4000:]}"
    finally:
        store.close()


def test_a_lock_held_by_another_session_stalls_no_node(postgres_url: str, tmp_path: Path) -> None:
    count = 32
    store, procs, started = cluster(tmp_path, postgres_url, 2, count)
    locked = {f"c{i:02d}" for i in range(3, count, 7)}
    assert len(locked) == 5
    engine = create_engine(postgres_url)
    try:
        time.sleep(max(0.0, started + 8 + random.random() - time.monotonic()))
        with engine.connect() as conn:
            # Like a psql session: SELECT ... FOR UPDATE on 5 schedule rows, held 15 s.
            conn.execute(
                text("SELECT id FROM tickwork_schedules WHERE name = ANY(:names) FOR UPDATE"), {"names": sorted(locked)}
            ).all()
            lock_from = store.now()
            time.sleep(15.0)
            lock_to = store.now()
            conn.rollback()
        logs = wait_for(procs, tmp_path)
        end = store.now()
        rows = history(store)
        check_exactly_once(rows, tmp_path)
        others = {f"c{i:02d}" for i in range(count)} - locked
        share = ran_share(rows, others, whole_second(lock_from) + timedelta(seconds=1), whole_second(lock_to))
        assert share >= 0.95, f"{share:.1%} of the unlocked schedules' fires ran during the lock\n{warnings(logs)}"
        assert "another database session" in logs, warnings(logs)
        # No duty of either node waited for the locked rows (it fails at lock_timeout, 1 s, with
        # the loop standing still meanwhile: the node's fires claimed ahead were taken over).
        assert "lock timeout" not in logs, warnings(logs)
        # The locked ones resume after it.
        after = whole_second(lock_to) + timedelta(seconds=3)
        assert ran_share(rows, locked, after, whole_second(end) - timedelta(seconds=3)) >= 0.9
    finally:
        engine.dispose()
        store.close()
