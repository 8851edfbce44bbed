"""The cluster scenario every hand-off executor is tested under: two tickwork nodes (hash ring,
PostgreSQL) hand 20 every-second schedules to real workers while one node is killed with SIGKILL.

Judged from two independent records, the line each execution appends (tests/support/handoff/jobs.py) and
tickwork's history:

* every (schedule, fire time) the workers executed is unique, by message id and by the log;
* every message id is the fire's identity, uuid5 of (schedule, scheduled time, attempt);
* >= 90 % of the expected fires ran (see :func:`expected_fires`);
* the history shows the workers' outcomes: ``succeeded``, and ``failed`` with the traceback for
  the schedule whose task raises.
"""

from __future__ import annotations

import collections
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.handoff import harness
from tests.support.servers.configs import ConfigFor
from tickwork.structures import RunStatus
from tickwork_handoff.identity import message_id

SCHEDULES = 20
#: How long each node runs (the killed one is killed 5 s after both hand off).
DURATION = 25.0
#: Hash-ring takeover after a SIGKILL (node_ttl 4 s + heartbeat 1 s), one fire interval and a margin.
TAKEOVER = 9.0


@dataclass(frozen=True)
class Queue:
    """One queue system under test: its executor and how to start its worker(s)."""

    executor: str
    table: dict[str, Any]
    work: str
    boom: str
    #: (env, log directory) -> the started worker processes, ready to consume
    start_workers: Callable[[dict[str, str], Path], list[subprocess.Popen[bytes]]]
    env: dict[str, str]
    #: the task of tests/support/handoff/jobs.py ``slow`` (tests/support/handoff/scenarios.py)
    slow: str = ""


def run(tmp_path: Path, config_for: ConfigFor, queue: Queue) -> None:
    store_config = config_for("postgres", migrated=True)
    log = tmp_path / "executions.jsonl"
    table = {"report_timeout": 30, **queue.table}
    configs = [
        harness.write_config(tmp_path / f"n{i}.toml", store_config.store, f"n{i}", queue.executor, table)
        for i in (1, 2)
    ]
    env = harness.env_for(configs[0], log, **queue.env)
    with harness.admin(configs[0]) as admin:
        for i in range(SCHEDULES - 1):
            admin.add(f"w{i:02d}", "* * * * * *", queue.work, executor=queue.executor, args={"n": i})
        admin.add("boom", "* * * * * *", queue.boom, executor=queue.executor)
    store = store_config.build_store()
    store.open()
    workers = queue.start_workers(env, tmp_path)
    nodes = [harness.start_node(c, DURATION, env, tmp_path / f"{c.stem}.log") for c in configs]
    try:
        # Counted from when the worker reports the runs both nodes handed off: the nodes' and the
        # worker's start-up on a busy machine is not the subject (until the worker's first reports,
        # each next fire is skipped as its previous hand-off is not final yet, as it should be).
        final = (RunStatus.SUCCEEDED, RunStatus.FAILED)
        harness.wait_until(
            lambda: {r.node for r in harness.history(store) if r.status in final} >= {"n1", "n2"},
            30,
            "the worker to report runs both nodes handed off",
        )
        up = store.now()
        time.sleep(5.0)
        harness.kill(nodes[0])
        killed_at = store.now()
        assert nodes[1].wait(timeout=DURATION + 60) == 0, harness.tails([tmp_path / "n2.log"])
        rows = harness.settled(store)
    finally:
        for node in nodes:
            harness.kill(node)
        for worker in workers:
            harness.stop(worker)
        store.close()
    done = harness.executions(log)
    logs = harness.tails(sorted(tmp_path.glob("*.log")))

    # Exactly once: by the message id the worker saw, and by (schedule, fire time) it logged.
    ids = collections.Counter(e["message_id"] for e in done)
    assert [i for i, n in ids.items() if n > 1] == [], logs
    fires = collections.Counter((e["schedule"], e["scheduled_for"]) for e in done)
    assert [f for f, n in fires.items() if n > 1] == [], logs
    # The id is the fire's identity: derived from (schedule, scheduled time, attempt).
    by_id = {r.id: r for r in rows}
    for e in done:
        run = by_id[e["run_id"]]
        assert e["message_id"] == message_id(run.schedule, run.scheduled_for, run.attempt)
        assert (e["schedule"], e["scheduled_for"]) == (run.schedule, run.scheduled_for.isoformat())

    expected = expected_fires(rows, up, killed_at)
    ran = expected & set(fires)
    recorded = {(r.schedule, r.scheduled_for.isoformat()): r for r in rows}
    why = "\n".join(f"{m}: {recorded.get(m)}" for m in sorted(expected - ran)[:40])
    assert len(ran) >= 0.9 * len(expected), f"{len(ran)} of {len(expected)} expected fires ran; missing:\n{why}\n{logs}"

    # The history shows the worker's outcomes.
    for e in done:
        run = by_id[e["run_id"]]
        if run.schedule == "boom":
            assert run.status is RunStatus.FAILED, run
            assert (
                run.error is not None and "Boom: the task failed on purpose" in run.error and "Traceback" in run.error
            )
        else:
            assert run.status is RunStatus.SUCCEEDED, run
    assert any(e["schedule"] == "boom" for e in done)


def expected_fires(rows: list[harness.Run], up: datetime, killed_at: datetime) -> set[tuple[str, str]]:
    """Every second of every schedule from when both nodes hand off to the last fire, except the
    takeover gap of the schedules the killed node owned at the kill (their fires in that gap pass
    unclaimed until the ring notices, as misfire = "skip" says)."""
    last = max(r.scheduled_for for r in rows)
    first = up.replace(microsecond=0) + timedelta(seconds=1)
    seconds = [first + timedelta(seconds=s) for s in range(int((last - first).total_seconds()))]
    # Every schedule the killed node handed off at any time counts as its own: with two nodes each
    # bucket has both as owners, and on a loaded machine its last runs may lie seconds before the
    # kill, so "ran by n1 just before the kill" missed schedules whose gap is the takeover's.
    owned = {r.schedule for r in rows if r.node == "n1" and r.status is not RunStatus.SKIPPED}
    gap = (killed_at - timedelta(seconds=2), killed_at + timedelta(seconds=TAKEOVER))
    return {
        (name, t.isoformat())
        for name in {r.schedule for r in rows}
        for t in seconds
        if not (name in owned and gap[0] <= t <= gap[1])
    }
