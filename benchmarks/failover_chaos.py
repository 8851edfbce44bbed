"""Failover under kills and a database restart: the share of fires that ran, duplicates, early starts.

Run: ``.venv/bin/python benchmarks/failover_chaos.py kill [--trials 3]`` or
``.venv/bin/python benchmarks/failover_chaos.py chaos [--seconds 70]``.

``kill``: per trial, three hashring nodes on PostgreSQL (the test server, a fresh database) run 30
schedules firing every second for 32 s; one node is killed (SIGKILL) 12 s in, at a random phase of
the second, and not restarted. ``chaos``: the same cluster on a throwaway PostgreSQL server for
``--seconds``; a node is killed every 12 s (each in turn) and restarted 2 s later, and PostgreSQL
is restarted once (3 s down) half-way. Each prints the fires expected from 6 s after the first run
to 3 s before the end (every schedule, every second), the share that ran (``succeeded``), fire times
recorded twice, executions beyond the recorded runs, and runs started before their time. The
harness is the test suite's (tests/test_cluster.py, tests/test_failover.py).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.servers.postgres import POSTGRES
from tests.test_cluster import node_config, start_node
from tests.test_failover import SCHEDULES, Run, cluster, executions, history, missing, ran_share, whole_second

#: Seconds after the first run before fires count: nodes start one after another (3-5 s on a busy
#: machine), and the fires due before the first claim are skipped by the misfire policy.
START_UP = 6


def report(label: str, rows: list[Run], work: Path, lo: datetime, hi: datetime) -> float:
    names = {f"c{i:02d}" for i in range(SCHEDULES)}
    share = ran_share(rows, names, lo, hi)
    per_fire = collections.Counter((r.name, r.scheduled_for) for r in rows)
    doubled = sum(1 for n in per_fire.values() if n > 1)
    ran = executions(work)
    recorded = collections.Counter(r.name for r in rows if r.status in ("succeeded", "abandoned", "timed_out"))
    extra = sum(max(0, ran[n] - recorded[n]) for n in names)
    early = sum(1 for r in rows if r.started_at is not None and r.started_at < r.scheduled_for)
    expected = len(names) * (int((hi - lo).total_seconds()) + 1)
    statuses = collections.Counter(r.status for r in rows)
    print(
        f"{label}: {share:.2%} of {expected} expected fires ran; fire times recorded twice: {doubled}; "
        f"executions beyond the recorded runs: {extra}; early starts: {early}; statuses: {dict(statuses)}",
        flush=True,
    )
    if share < 1.0:
        # "c03 10:14:02 skipped on n1: passed before ... (3.7s late)": counted by second and why.
        why = collections.Counter(
            (line.split(" ", 2)[1], line.split(" ", 2)[2].split("(")[0][:70])
            for line in missing(rows, names, lo, hi).splitlines()
        )
        print("  not run (fire time, what the history says: how many schedules):", flush=True)
        for (at, what), n in sorted(why.items()):
            print(f"    {at} {what}: {n}", flush=True)
    return share


def kill_trial(url: str, trial: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store, procs, started = cluster(work, url, 3)
        try:
            phase = random.random()
            time.sleep(max(0.0, started + 12 + phase - time.monotonic()))
            killed_at = store.now()
            procs[1].send_signal(signal.SIGKILL)
            for p in procs:
                p.wait(timeout=120)
            first = min(r.scheduled_for for r in history(store) if r.status == "succeeded")
            end = store.now()
            rows = history(store)
            lo, hi = whole_second(first) + timedelta(seconds=START_UP), whole_second(end) - timedelta(seconds=3)
            return report(f"kill trial {trial} (killed at {killed_at.time()})", rows, work, lo, hi)
        finally:
            store.close()


def chaos(url: str, seconds: float, restart_db: Callable[[], None]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        store, procs, started = cluster(work, url, 3, duration=seconds)
        try:
            victim, at, db_restarted = 0, 12.0, False
            while at < seconds - 6:
                if not db_restarted and at > seconds / 2:
                    time.sleep(max(0.0, started + seconds / 2 - time.monotonic()))
                    restart_db()
                    store.engine.dispose()  # its pooled connections died with the server
                    db_restarted = True
                time.sleep(max(0.0, started + at + random.random() - time.monotonic()))
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                time.sleep(2.0)
                remaining = seconds - (time.monotonic() - started)
                node = f"n{victim + 1}"
                procs[victim] = start_node(
                    node_config(work, url, node), work / "fires.txt", remaining, work / f"{node}.log"
                )
                victim, at = (victim + 1) % 3, at + 12.0
            for p in procs:
                p.wait(timeout=seconds + 120)
            first = min(r.scheduled_for for r in history(store) if r.status == "succeeded")
            end = store.now()
            rows = history(store)
            lo, hi = whole_second(first) + timedelta(seconds=START_UP), whole_second(end) - timedelta(seconds=3)
            return report(f"chaos {seconds:.0f} s", rows, work, lo, hi)
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("kill", "chaos"))
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=70.0)
    args = parser.parse_args()
    if args.mode == "kill":
        with POSTGRES.session_server(os.environ) as server:
            for trial in range(1, args.trials + 1):
                with POSTGRES.fresh_database(server) as dbname:
                    kill_trial(server.url(dbname), trial)
        return
    server = POSTGRES.start_throwaway(os.environ)
    assert server.throwaway is not None
    try:
        import psycopg

        with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE chaos")

        def restart_db() -> None:
            assert server.throwaway is not None
            print("restarting PostgreSQL (3 s down)", flush=True)
            server.throwaway.restart(down_seconds=3.0)

        chaos(server.url("chaos"), args.seconds, restart_db)
    finally:
        server.throwaway.stop()


if __name__ == "__main__":
    main()
