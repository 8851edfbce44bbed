"""Failover under kills and a database restart: the share of fires that ran, duplicates, early starts.

Run: ``.venv/bin/python benchmarks/failover_chaos.py kill [--trials 3] [--phase 0.1]`` or
``.venv/bin/python benchmarks/failover_chaos.py chaos [--seconds 70] [--misfire all] [--down 0]`` or
``.venv/bin/python benchmarks/failover_chaos.py ends DIR...``.

``kill``: per trial, three hashring nodes on PostgreSQL (the test server, a fresh database) run 30
schedules firing every second for 32 s from the first run (times count from the first run, not
from the launch: nodes take up to 15 s to start on a busy machine, and stop with SIGTERM at the
end); one node is killed (SIGKILL) 12 s in, at a random phase of
the second (``--phase``: that many seconds after a whole second of the database clock), and not
restarted. ``chaos``: the same cluster on a throwaway PostgreSQL server for ``--seconds``; a node is
killed every 12 s (each in turn) and restarted 2 s later, and PostgreSQL is restarted once
half-way (``--down``: seconds between its stop and its start, default 3). Each prints the fires
expected from 6 s after the first run started to 3 s before the end
(every schedule, every second), the share that ran (``succeeded``, whenever it started: a fire run
late counts), fire times recorded twice, executions beyond the recorded runs, runs started before
their time, and the runs recorded ``abandoned`` whose job had in fact completed (the job leaves a
line when it returns; a kill between that and the write of its end loses the end). ``chaos`` also
prints the fire times that passed while the database could not be reached (from the last answer
before the restart to the first after it) and how many of them ran. ``--misfire`` sets the
schedules' misfire policy (default: the node's, ``skip``: of the fire times a schedule could not
claim during the outage, one runs late and the others are recorded ``skipped``; ``all`` runs each
within ``misfire_grace``). ``--keep DIR`` keeps the nodes' logs; ``ends DIR...`` reads kept logs
and prints how long after their fire time the runs' ends were written. The harness is the test suite's
(tests/system/test_cluster.py, tests/system/test_failover.py).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import func, select, update
from tests.support.cluster import QUICK_REAP, node_config, seed, start_node
from tests.support.failover import SCHEDULES, Run, executions, history, missing, ran_share, whole_second
from tests.support.servers.postgres import POSTGRES

from tickwork.sql.schema import runs, schedules
from tickwork_postgres.store import PostgresStore

#: Seconds after the first run before fires count: nodes start one after another (3-5 s on a busy
#: machine), and the fires due before the first claim are skipped by the misfire policy.
START_UP = 6
#: Longest start-up of the cluster allowed for (seconds from launch to the first run).
STARTING = 30.0
KILL_SECONDS = 32.0


@contextmanager
def workdir(keep: Path | None, name: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            yield work
        finally:
            if keep is not None:
                target = keep / name
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(work, target)


#: ``--no-presence``: the nodes judge each other by node_ttl alone (the build before presence).
PRESENCE = {"on": True}


def config(work: Path, url: str, node: str) -> Path:
    """The test suite's node configuration, with ``[membership] presence`` as asked."""
    membership = None if PRESENCE["on"] else {"presence": False}
    return node_config(work, url, node, scheduler=QUICK_REAP, store={"claim": "skip-locked"}, membership=membership)


def cluster(
    work: Path, url: str, seconds: float, misfire: str | None
) -> tuple[PostgresStore, list[subprocess.Popen[bytes]], float]:
    store = seed(url, SCHEDULES)
    if misfire is not None:
        with store.engine.begin() as conn:
            conn.execute(update(schedules).values(misfire=misfire))
    (work / "fires.txt").touch()
    # Each run that returns leaves "n scheduled_for" here (tests/support/cluster_jobs.py).
    os.environ["CLUSTER_DONE"] = str(work / "done.txt")
    # Started for longer than asked, stopped (SIGTERM) ``seconds`` after the first run: on a busy
    # machine a node takes up to 10-15 s to start, and the kills are timed from the first run.
    procs = [
        start_node(config(work, url, f"n{i}"), work / "fires.txt", seconds + STARTING, work / f"n{i}.log")
        for i in (1, 2, 3)
    ]
    deadline = time.monotonic() + STARTING
    while not first_start(store) and time.monotonic() < deadline:
        time.sleep(0.2)
    return store, procs, time.monotonic()


def first_start(store: PostgresStore) -> datetime | None:
    with store.engine.connect() as conn:
        return conn.execute(select(func.min(runs.c.started_at))).scalar()


def stop(procs: list[subprocess.Popen[bytes]], at: float) -> None:
    """Stop the nodes (SIGTERM: a graceful stop) at the monotonic time ``at``."""
    time.sleep(max(0.0, at - time.monotonic()))
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(timeout=120)


def completed(work: Path) -> set[tuple[str, datetime]]:
    """The (schedule, fire time) of every run whose job returned."""
    path = work / "done.txt"
    if not path.exists():
        return set()
    pairs = (line.split() for line in path.read_text().splitlines())
    return {(f"c{int(n):02d}", datetime.fromisoformat(at)) for n, at in pairs}


def report(
    label: str, rows: list[Run], work: Path, lo: datetime, hi: datetime, outage: tuple[datetime, datetime] | None = None
) -> float:
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
    done = completed(work)
    abandoned = [r for r in rows if r.status == "abandoned"]
    ended_but_abandoned = sum(1 for r in abandoned if (r.name, r.scheduled_for) in done)
    half = timedelta(seconds=0.5)
    late = sum(1 for r in rows if r.status == "succeeded" and r.started_at and r.started_at - r.scheduled_for > half)
    print(
        f"{label}: {share:.2%} of {expected} expected fires ran ({late} of all runs started > 0.5 s late); "
        f"fire times recorded twice: {doubled}; executions beyond the recorded runs: {extra}; early starts: {early}; "
        f"abandoned: {len(abandoned)}, of which the job had completed: {ended_but_abandoned}; "
        f"statuses: {dict(statuses)}",
        flush=True,
    )
    if outage is not None:
        down_lo, down_hi = outage
        inside = [
            (n, at)
            for n in names
            for s in range(int((hi - lo).total_seconds()) + 1)
            if down_lo <= (at := lo + timedelta(seconds=s)) <= down_hi
        ]
        succeeded = {(r.name, r.scheduled_for) for r in rows if r.status == "succeeded"}
        print(
            f"  database unreachable from {down_lo.time()} to {down_hi.time()} (last answer before, first after): "
            f"{len(inside)} fire times in it, {sum(1 for k in inside if k in succeeded)} ran (late)",
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


#: "2026-11-26 14:05:15,085 INFO    tickwork.runs: c07 (due 2026-11-26T14:05:15+00:00): succeeded"
RUN_LINE = re.compile(r"^(\S+ \S+) INFO +tickwork\.runs: c\d+ \(due (\S+)\): succeeded$")


def end_lags(dirs: list[Path]) -> None:
    """How long after its fire time each succeeded run's end was written (the node logs the end
    when its batch is written), from the nodes' logs kept by ``--keep``: the window in which a
    kill leaves a finished run without its end is this less the job's own time (50 ms here)."""
    lags: list[float] = []
    for log in sorted(p for d in dirs for p in d.rglob("n*.log")):
        for line in log.read_text(errors="replace").splitlines():
            m = RUN_LINE.match(line)
            if m:
                written = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC)
                lags.append((written - datetime.fromisoformat(m.group(2))).total_seconds() * 1000)
    # Runs more than a second late (start-up, take-overs, the outage) are not the steady state.
    steady = sorted(lag for lag in lags if 0 <= lag < 1000)
    if not steady:
        print("no succeeded runs in the logs", flush=True)
        return
    pick = [steady[min(len(steady) - 1, int(q * len(steady)))] for q in (0.5, 0.9, 0.99)]
    print(
        f"{len(steady)} ends written within a second of their fire time: p50/p90/p99 "
        f"{pick[0]:.0f}/{pick[1]:.0f}/{pick[2]:.0f} ms after it (max {steady[-1]:.0f} ms)",
        flush=True,
    )


def window(store: PostgresStore, rows: list[Run]) -> tuple[datetime, datetime]:
    """From START_UP after the first run started (fires due before any node was up are not
    expected: the first run stands for them, the others are skipped by the misfire policy) to
    3 s before the end."""
    first = min(r.started_at for r in rows if r.status == "succeeded" and r.started_at is not None)
    return whole_second(first) + timedelta(seconds=START_UP), whole_second(store.now()) - timedelta(seconds=3)


def kill_trial(url: str, trial: int, phase: float | None, misfire: str | None, keep: Path | None) -> float:
    with workdir(keep, f"kill{trial}") as work:
        store, procs, started = cluster(work, url, KILL_SECONDS, misfire)
        try:
            if phase is None:
                time.sleep(max(0.0, started + 12 + random.random() - time.monotonic()))
            else:
                # At ``phase`` after a whole second by the database clock (the fires' time).
                time.sleep(max(0.0, started + 12 - time.monotonic()))
                now = store.now()
                time.sleep(1 - now.microsecond / 1e6 + phase)
            killed_at = store.now()
            procs[1].send_signal(signal.SIGKILL)
            stop(procs, started + KILL_SECONDS)
            rows = history(store)
            lo, hi = window(store, rows)
            share = report(f"kill trial {trial} (killed at {killed_at.time()})", rows, work, lo, hi)
            released = release_delay(store, "n2", killed_at)
            print(f"  n2 released {released}" if released else "  n2 held nothing when killed: nothing to release")
            return share
        finally:
            store.close()


def release_delay(store: PostgresStore, node: str, killed_at: datetime) -> str | None:
    """How long after the kill the survivors released the node's runs (their ``abandoned``
    rows' end time, database clock), and which rule released them."""
    with store.engine.connect() as conn:
        row = conn.execute(
            select(func.min(runs.c.finished_at), func.min(runs.c.error)).where(
                runs.c.node == node, runs.c.status == "abandoned", runs.c.finished_at >= killed_at
            )
        ).one()
    if row[0] is None:
        return None
    how = "its database session ended" if "database session ended" in (row[1] or "") else "node_ttl"
    return f"{(row[0] - killed_at).total_seconds():.2f}s after the kill ({how})"


def chaos(url: str, seconds: float, restart_db: Callable[[], None], misfire: str | None, keep: Path | None) -> float:
    with workdir(keep, "chaos") as work:
        store, procs, started = cluster(work, url, seconds, misfire)
        outage: tuple[datetime, datetime] | None = None
        try:
            victim, at = 0, 12.0
            while at < seconds - 6:
                if outage is None and at > seconds / 2:
                    time.sleep(max(0.0, started + seconds / 2 - time.monotonic()))
                    down_from = store.now()
                    restart_db()
                    store.engine.dispose()  # its pooled connections died with the server
                    outage = (down_from, store.now())
                time.sleep(max(0.0, started + at + random.random() - time.monotonic()))
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                time.sleep(2.0)
                remaining = seconds - (time.monotonic() - started)
                node = f"n{victim + 1}"
                procs[victim] = start_node(config(work, url, node), work / "fires.txt", remaining, work / f"{node}.log")
                victim, at = (victim + 1) % 3, at + 12.0
            stop(procs, started + seconds)
            rows = history(store)
            lo, hi = window(store, rows)
            return report(f"chaos {seconds:.0f} s", rows, work, lo, hi, outage)
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("kill", "chaos", "ends"))
    parser.add_argument("dirs", nargs="*", type=Path, help="ends: directories kept by --keep")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=70.0)
    parser.add_argument("--phase", type=float, default=None, help="kill: seconds after a whole second (0-1)")
    parser.add_argument("--misfire", choices=("skip", "once", "all"), default=None)
    parser.add_argument("--keep", type=Path, default=None, help="copy each run's logs and files here")
    parser.add_argument(
        "--down", type=float, default=3.0, help="chaos: seconds PostgreSQL stays down in its restart (0: stop, start)"
    )
    parser.add_argument("--no-presence", action="store_true", help="[membership] presence = false on every node")
    args = parser.parse_args()
    PRESENCE["on"] = not args.no_presence
    if args.mode == "ends":
        end_lags(args.dirs)
        return
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    if args.mode == "kill":
        with POSTGRES.session_server(os.environ) as server:
            for trial in range(1, args.trials + 1):
                with POSTGRES.fresh_database(server) as dbname:
                    kill_trial(server.url(dbname), trial, args.phase, args.misfire, args.keep)
        return
    server = POSTGRES.start_throwaway(os.environ)
    assert server.throwaway is not None
    try:
        import psycopg

        with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE chaos")

        def restart_db() -> None:
            assert server.throwaway is not None
            print(f"restarting PostgreSQL ({args.down:g} s down between its stop and its start)", flush=True)
            server.throwaway.restart(down_seconds=args.down)

        chaos(server.url("chaos"), args.seconds, restart_db, args.misfire, args.keep)
    finally:
        server.throwaway.stop()


if __name__ == "__main__":
    main()
