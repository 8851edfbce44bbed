"""Fault injection on real PostgreSQL: two hashring node processes, 30 every-second schedules (a
third of them failing their first attempts on odd seconds, retried), and one random backend of the
test's own database terminated every 0.3 s for most of the run. Both nodes must stop by themselves
with exit 0, nothing may run twice or be left ``running``, and most fires must run."""

from __future__ import annotations

import collections
import random
import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url

from tests.support.cluster import QUICK_REAP, node_config, start_node
from tickwork import schedules as admin
from tickwork.sql.schema import runs, schedules
from tickwork.structures import ScheduleSpec, ScheduleState
from tickwork_postgres.store import PostgresStore

pytestmark = pytest.mark.slow

SCHEDULES = 30
DURATION = 40.0
KILL_FROM, KILL_FOR, KILL_EVERY = 3.0, 35.0, 0.3


def terminate_backends(url: str, stop: threading.Event, killed: list[int]) -> None:
    """Terminate one random backend of this test's database (never another engineer's: the
    server is shared) every KILL_EVERY seconds until ``stop``."""
    parsed = make_url(url)
    dbname = parsed.database
    conninfo = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    rng = random.Random(12)
    deadline = time.monotonic() + KILL_FOR
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
                pids = [
                    row[0]
                    for row in conn.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                        (dbname,),
                    )
                ]
                if pids:
                    pid = rng.choice(pids)
                    conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE pid = %s AND datname = %s AND pid <> pg_backend_pid()",
                        (pid, dbname),
                    )
                    killed.append(pid)
        except psycopg.Error:
            pass
        stop.wait(KILL_EVERY)


def test_terminated_backends_strand_nothing_and_duplicate_nothing(postgres_url: str, tmp_path: Path) -> None:
    store = PostgresStore(postgres_url)
    store.upgrade()
    store.open()
    for i in range(SCHEDULES):
        failing = i % 3 == 0
        admin.add(
            store,
            ScheduleSpec(
                name=f"k{i:02d}",
                trigger_kind="cron",
                expression="* * * * * *",
                target="tests.support.cluster_jobs:odd_fails" if failing else "tests.support.cluster_jobs:work",
                arguments={"n": i},
                timeout=timedelta(seconds=5),
                retries=2 if failing else 0,
                retry_backoff=timedelta(seconds=0.2),
            ),
        )
    fires = tmp_path / "fires.txt"
    fires.touch()
    started_at = store.now()
    procs = [
        start_node(
            node_config(tmp_path, postgres_url, f"n{i}", scheduler=QUICK_REAP, store={"claim": "skip-locked"}),
            fires,
            DURATION,
            tmp_path / f"n{i}.log",
        )
        for i in (1, 2)
    ]
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=terminate_backends, args=(postgres_url, stop, killed))
    # Terminations begin once both nodes have opened the store (their banner is logged after it):
    # this test is about running nodes, and a loaded machine may take longer than KILL_FROM to start.
    begun = time.monotonic()
    for i in (1, 2):
        log = tmp_path / f"n{i}.log"
        while f"node n{i} starting" not in (log.read_text(errors="replace") if log.exists() else ""):
            assert time.monotonic() - begun < 60 and procs[i - 1].poll() is None, log.read_text(errors="replace")
            time.sleep(0.1)
    time.sleep(max(0.0, KILL_FROM - (time.monotonic() - begun)))
    killer.start()
    try:
        codes = [p.wait(timeout=DURATION + 60) for p in procs]
    finally:
        stop.set()
        killer.join(10)
    ended_at = store.now()
    logs = "\n".join(f.read_text(errors="replace")[-3000:] for f in sorted(tmp_path.glob("n*.log")))
    assert codes == [0, 0], logs
    assert len(killed) > 50, "backends were not terminated"

    assert [s.name for s in store.list_schedules() if s.state is ScheduleState.RUNNING] == [], logs
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(schedules.c.name, runs.c.scheduled_for, runs.c.attempt, runs.c.status).join(
                schedules, schedules.c.id == runs.c.schedule_id
            )
        ).all()
    store.close()
    assert [r for r in rows if r.status == "running"] == []
    per_attempt = collections.Counter((r.name, r.scheduled_for, r.attempt) for r in rows)
    assert max(per_attempt.values()) == 1

    executions = fires.read_text().splitlines()
    attempts = [line.split() for line in executions]
    retried = collections.Counter((f[0], f[2], f[3]) for f in attempts if len(f) == 4)
    assert max(retried.values(), default=1) == 1, "an attempt of a fire executed twice"
    ran = {(r.name, r.scheduled_for) for r in rows if r.status in ("succeeded", "failed") and r.attempt == 1}
    seconds = int((ended_at - started_at).total_seconds()) - 4  # start-up and stop of the nodes
    expected = SCHEDULES * seconds
    assert len(ran) >= 0.85 * expected, f"{len(ran)} of {expected} expected fires ran"
