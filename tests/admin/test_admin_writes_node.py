"""Admin writes on a schedule whose run is in flight, on a real node (issue #40, item 1): the
reproduction of the report, as an operator makes it. A `tickwork run` process (membership single)
runs a 3-second job every 2 seconds (overlap skip, the default); while a run is going the test
runs, as separate `tickwork` commands: disable + enable, pause + resume, update of the expression,
update of the timeout, trigger. Judged from the lines the job writes (the ground truth of what
ran) and the history table.

Before the fix (every toggle, on PostgreSQL): the write made the running run look claimed ahead
and unstarted, the takeover handed the fire back and deleted its history row, and the next fire
started while the first job still ran."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tickwork_mysql.store import MySQLStore
from tickwork_postgres.store import PostgresStore

RUN_FOR = 90.0  # an upper bound: the test stops the node once the runs it judges ended

pytestmark = pytest.mark.slow


def config(tmp_path: Path, plugin: str, url: str) -> Path:
    path = tmp_path / "tickwork.toml"
    path.write_text(
        f'[scheduler]\nnode_id = "n1"\n[store]\nplugin = "{plugin}"\nurl = "{url}"\n[membership]\nplugin = "single"\n'
    )
    return path


def lines(path: Path) -> list[tuple[str, datetime, int]]:
    """(start|end, fire time, pid) of every line the job wrote, in order."""
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        what, _name, fire, pid = line.split()
        out.append((what, datetime.fromisoformat(fire), int(pid)))
    return out


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("database", ["postgres", "mysql"])
def test_admin_writes_during_a_run_keep_one_run_at_a_time_and_every_history_row(
    tmp_path: Path, database: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(f"{database}_url")
    cfg = config(tmp_path, database, url)
    fires = tmp_path / "fires.txt"
    env = dict(os.environ, OVERLAP_FIRES=str(fires), TICKWORK_CONFIG=str(cfg))

    def tickwork(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "tickwork.cli", *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)

    tickwork("db", "upgrade")
    tickwork(
        "jobs",
        "add",
        "long",
        "*/2 * * * * *",
        "tests.support.overlap_jobs:busy",
        "--args",
        '{"seconds": 3}',
        "--timeout",
        "60",
    )
    log = (tmp_path / "node.log").open("ab")
    node = subprocess.Popen(
        [sys.executable, "-m", "tickwork.cli", "run", "--for", f"{RUN_FOR:.1f}"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:

        def in_flight() -> bool:
            written = lines(fires)
            return bool(written) and written[-1][0] == "start"

        # Each group of writes lands while a run is going (a start line without its end yet).
        for writes in (
            [
                ("jobs", "disable", "long"),
                ("jobs", "enable", "long"),
                ("jobs", "pause", "long", "--note", "x"),
                ("jobs", "resume", "long"),
            ],
            [
                ("jobs", "update", "long", "--expression", "*/3 * * * * *"),
                ("jobs", "update", "long", "--timeout", "61"),
                ("jobs", "trigger", "long"),
            ],
        ):
            wait_for(in_flight, 20, "a run in flight")
            for args in writes:
                tickwork(*args)
            # The next group waits for a later run (the one after this one ended).
            started = len(lines(fires))
            wait_for(lambda n=started: len(lines(fires)) > n, 20, "the run to end")
        # The run the trigger asked for, after the one it came during, and its end.
        done = len(lines(fires))
        wait_for(lambda: len(lines(fires)) >= done + 3 and not in_flight(), 30, "two more runs")
        node.send_signal(signal.SIGTERM)
        node.wait(timeout=RUN_FOR + 60)
    finally:
        if node.poll() is None:
            node.kill()
    node_log = (tmp_path / "node.log").read_text(errors="replace")[-4000:]
    assert node.returncode == 0, node_log
    written = lines(fires)
    starts = [fire for what, fire, _ in written if what == "start"]
    # One run at a time (overlap skip): each start follows the previous run's end.
    assert [what for what, _, _ in written[: 2 * (len(written) // 2)]] == ["start", "end"] * (len(written) // 2), (
        written,
        node_log,
    )
    assert len(starts) == len(set(starts)), "a fire ran twice"
    store = MySQLStore(url) if database == "mysql" else PostgresStore(url)
    store.open()
    try:
        rows = store.history(schedule="long", limit=1000)
    finally:
        store.close()
    ran = {r.scheduled_for: r for r in rows if r.status.value != "skipped"}
    # Every execution has its history row, as the run it was (never deleted by a takeover).
    assert all(fire in ran for fire in starts), ([f for f in starts if f not in ran], rows, node_log)
    assert len(starts) >= 4, (written, node_log)
    # Nothing recorded as run that did not run (a run cut by the node's stop is `abandoned` or
    # `cancelled`, not succeeded).
    succeeded = {r.scheduled_for for r in rows if r.status.value == "succeeded"}
    assert succeeded <= set(starts), (rows, written)
    for before, after in itertools.pairwise(sorted(ran)):
        assert before < after
