"""A MariaDB restart under load (issue #40, "not yet tried from outside"): two hashring node
processes on a throwaway MariaDB (tests/support/servers/mysql.py) run 50 every-second schedules, and the
server is stopped (a normal shutdown), left down 3 s and started again on the same port, as
benchmarks/failover_chaos.py restarts PostgreSQL.

Judged from the history and the line each execution appends (tests/support/cluster_jobs.py ``lasting``):

* no (schedule, fire time) recorded or executed twice, and none started before its time;
* every fire time of every schedule, from before the restart to after it, was run or recorded
  with a reason (``skipped``, ``abandoned``, ...), a ``skipped`` one never ran, and nothing is
  left ``running``;
* both nodes stay up, and fire again after the restart (each schedule, and each node).
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.cluster import MYSQL_STORE, QUICK_REAP, node_config, start_node
from tests.support.servers.mysql import MYSQL
from tickwork.scheduling import sync as admin
from tickwork.sql.schema import runs, schedules
from tickwork.structures import ScheduleSpec
from tickwork_mysql.store import MySQLStore

pytestmark = pytest.mark.slow

SCHEDULES = 50
NODES = ("n1", "n2")
DOWN_S = 3.0
#: Seconds of steady firing by both nodes before the restart.
BEFORE_S = 1.0
#: Fires of each schedule that must have run after the restart before the nodes are stopped.
RUNS_AFTER = 2
#: Guards against a hang (a node that never resumes); not timing assertions.
WAIT_S = 60.0
#: Statuses that end a run; every one but ``succeeded`` carries its reason.
ENDED = frozenset({"succeeded", "failed", "skipped", "abandoned", "timed_out"})


@dataclass(frozen=True)
class Run:
    name: str
    scheduled_for: datetime
    started_at: datetime | None
    status: str
    node: str | None
    error: str | None
    attempt: int
    run_id: int


def history(store: MySQLStore) -> list[Run]:
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(
                schedules.c.name,
                runs.c.scheduled_for,
                runs.c.started_at,
                runs.c.status,
                runs.c.node,
                runs.c.error,
                runs.c.attempt,
                runs.c.id,
            ).join(schedules, schedules.c.id == runs.c.schedule_id)
        ).all()
    return [Run(*row) for row in rows]


def executions(fires: Path) -> list[tuple[str, str, int]]:
    """(schedule, fire time, run id) of every execution (tests/support/cluster_jobs.py ``lasting``)."""
    lines = (line.split() for line in fires.read_text().splitlines())
    return [(name, at, int(run_id)) for _, name, at, run_id in lines]


def whole_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.2)


def test_a_mariadb_restart_under_load_runs_nothing_twice_and_loses_no_fire(tmp_path: Path) -> None:
    # A server of this test's own: the session's may be shared, and it is stopped here.
    server = MYSQL.start_throwaway(os.environ)
    assert server.throwaway is not None
    procs: list[subprocess.Popen[bytes]] = []
    store = None
    try:
        MYSQL.create_database(server, "tickwork_restart")
        url = server.url("tickwork_restart")
        store = MySQLStore(url)
        store.upgrade()
        store.open()
        names = [f"m{i:02d}" for i in range(SCHEDULES)]
        for i, name in enumerate(names):
            admin.add(
                store,
                ScheduleSpec(
                    name=name,
                    trigger_kind="cron",
                    expression="* * * * * *",
                    target="tests.support.cluster_jobs:lasting",
                    arguments={"n": i, "seconds": 0.05},
                    timeout=timedelta(seconds=5),
                ),
            )
        fires = tmp_path / "fires.txt"
        fires.touch()
        procs = [
            start_node(
                node_config(tmp_path, url, n, plugin="mysql", scheduler=QUICK_REAP, store=MYSQL_STORE),
                fires,
                600,  # stopped by the test (SIGTERM) once it saw them fire again after the restart
                tmp_path / f"{n}.log",
            )
            for n in NODES
        ]
        db = store  # the closures below see it as opened, not Optional

        def fired_since(moment: datetime | None) -> tuple[set[str], set[str]]:
            """The schedules and the nodes with a succeeded run of a fire after ``moment``."""
            done = [r for r in history(db) if r.status == "succeeded" and (moment is None or r.scheduled_for > moment)]
            return {r.name for r in done}, {r.node for r in done if r.node is not None}

        def all_fired(moment: datetime | None) -> bool:
            assert all(p.poll() is None for p in procs), "a node exited"
            ran, nodes = fired_since(moment)
            return ran == set(names) and nodes == set(NODES)

        wait_until(lambda: all_fired(None), WAIT_S, "both nodes to fire every schedule")
        up = store.now()
        time.sleep(BEFORE_S)
        down = store.now()
        server.throwaway.restart(down_seconds=DOWN_S)
        # Its pooled connections died with the server.
        store.engine.dispose()
        restarted = store.now()
        wait_until(
            lambda: all_fired(restarted + timedelta(seconds=RUNS_AFTER)),
            WAIT_S,
            "both nodes to fire every schedule again after the restart",
        )
        stopped = store.now()
        for p in procs:
            p.send_signal(signal.SIGTERM)
        codes = [p.wait(timeout=WAIT_S) for p in procs]
        rows = history(store)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if store is not None:
            store.close()
        server.throwaway.stop()
    logs = "\n".join(f"--- {f.name}\n" + f.read_text(errors="replace")[-4000:] for f in sorted(tmp_path.glob("n*.log")))
    assert codes == [0, 0], logs

    # Nothing twice, nothing early.
    per_fire = collections.Counter((r.name, r.scheduled_for, r.attempt) for r in rows)
    assert [f for f, n in per_fire.items() if n > 1] == [], logs
    done = executions(fires)
    ran = collections.Counter((name, at) for name, at, _ in done)
    assert [f for f, n in ran.items() if n > 1] == [], logs
    early = [r for r in rows if r.started_at is not None and r.started_at < r.scheduled_for]
    assert early == [], early[:5]

    # Every run ended; a succeeded one executed (once, above); any other says why.
    by_id = {r.run_id: r for r in rows}
    assert [r for r in rows if r.status not in ENDED] == [], logs
    executed = set(ran)
    for r in rows:
        key = (r.name, r.scheduled_for.isoformat())
        if r.status == "succeeded":
            assert key in executed, r
        else:
            assert r.error, r
        if r.status == "skipped":
            assert key not in executed, r  # a fire the history says was skipped never ran
    for name, fire, run_id in done:
        assert (by_id[run_id].name, by_id[run_id].scheduled_for.isoformat()) == (name, fire)

    # Nothing lost: each fire time from before the restart to after it has a row.
    lo, hi = whole_second(up), whole_second(stopped) - timedelta(seconds=2)
    recorded = {(r.name, r.scheduled_for) for r in rows}
    span = int((hi - lo).total_seconds())
    missing = [(n, at) for n in names for s in range(span + 1) if (n, at := lo + timedelta(seconds=s)) not in recorded]
    assert missing == [], (missing[:20], logs)

    statuses = collections.Counter(r.status for r in rows if lo <= r.scheduled_for <= hi)
    reasons = collections.Counter(
        (r.status, (r.error or "").split("\n")[0][:70])
        for r in rows
        if r.status != "succeeded" and lo <= r.scheduled_for <= hi
    )
    print(
        f"restart from {down.time()} (down {DOWN_S:g} s) to {restarted.time()}; window {lo.time()}-{hi.time()}: "
        f"{dict(statuses)}; reasons {dict(reasons)}"
    )
