"""The ``celery`` executor against real brokers and real ``celery -A ... worker`` processes.

Every test judges from two independent records: the line each task execution appends to a file
(the worker's own log, tests/handoff/jobs.py) and tickwork's history table.
"""

from __future__ import annotations

import collections
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.handoff import harness
from tests.servers.configs import ConfigFor
from tickwork.structures import RunStatus
from tickwork_handoff.identity import message_id
from tickwork_handoff.reporter import LOST

pytestmark = pytest.mark.slow

APP = "tests.handoff.celery_app:app"
DURATION = 20.0
SCHEDULES = 20
#: Hash-ring takeover after a SIGKILL (node_ttl 4 s + heartbeat 1 s), one fire interval and a margin.
TAKEOVER = 9.0


@pytest.mark.parametrize("broker", ["amqp", "redis"])
def test_two_nodes_hand_every_fire_once_to_a_worker_while_one_node_is_killed(
    broker: str, request: pytest.FixtureRequest, tmp_path: Path, config_for: ConfigFor
) -> None:
    broker_url = request.getfixturevalue("amqp_url" if broker == "amqp" else "redis_url")
    store_config = config_for("postgres", migrated=True)
    queue, log = harness.queue_name(), tmp_path / "executions.jsonl"
    table = {"app": APP, "queue": queue, "report_timeout": 30}
    configs = [
        harness.write_config(tmp_path / f"n{i}.toml", store_config.store, f"n{i}", "celery", table) for i in (1, 2)
    ]
    env = harness.env_for(configs[0], log, HANDOFF_BROKER=broker_url)
    with harness.admin(configs[0]) as admin:
        for i in range(SCHEDULES - 1):
            admin.add(f"w{i:02d}", "* * * * * *", "handoff.work", executor="celery", args={"n": i})
        admin.add("boom", "* * * * * *", "handoff.boom", executor="celery")
    store = store_config.build_store()
    store.open()
    worker = harness.celery_worker(queue, env, tmp_path / "worker.log")
    nodes = [harness.start_node(c, DURATION, env, tmp_path / f"{c.stem}.log") for c in configs]
    try:
        time.sleep(5.0)
        harness.kill(nodes[0])
        killed_at = store.now()
        assert nodes[1].wait(timeout=DURATION + 60) == 0, harness.tails([tmp_path / "n2.log"])
        rows = harness.settled(store)
    finally:
        for node in nodes:
            harness.kill(node)
        harness.stop(worker)
        store.close()
    done = harness.executions(log)
    logs = harness.tails([tmp_path / "worker.log", tmp_path / "n1.log", tmp_path / "n2.log"])

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

    # >= 90 % of the expected fires ran. Expected: every second of every schedule from the
    # first fire (plus the three seconds in which the nodes find each other) to the last, except
    # the takeover gap of the schedules the killed node owned at the kill (their fires in that
    # gap pass unclaimed until the ring notices, as misfire = "skip" says).
    first, last = min(r.scheduled_for for r in rows), max(r.scheduled_for for r in rows)
    seconds = [first + timedelta(seconds=s) for s in range(3, int((last - first).total_seconds()))]
    owned = {r.schedule for r in rows if r.node == "n1" and killed_at - timedelta(seconds=3) <= r.scheduled_for}
    gap = (killed_at - timedelta(seconds=1), killed_at + timedelta(seconds=TAKEOVER))
    expected = {
        (name, t.isoformat())
        for name in {r.schedule for r in rows}
        for t in seconds
        if not (name in owned and gap[0] <= t <= gap[1])
    }
    ran = expected & set(fires)
    recorded = {(r.schedule, r.scheduled_for.isoformat()): r for r in rows}
    missing = sorted(expected - ran)
    why = "\n".join(f"{m}: {recorded.get(m)}" for m in missing[:40])
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
