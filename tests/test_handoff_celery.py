"""The ``celery`` executor against real brokers and real ``celery -A ... worker`` processes.

Every test judges from two independent records: the line each task execution appends to a file
(the worker's own log, tests/handoff/jobs.py) and tickwork's history table.
"""

from __future__ import annotations

import collections
import itertools
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.handoff import harness
from tests.servers.configs import ConfigFor
from tests.servers.redis import ThrowawayRedis
from tickwork.structures import RunStatus
from tickwork_handoff.identity import message_id
from tickwork_handoff.reporter import LOST

pytestmark = pytest.mark.slow

APP = "tests.handoff.celery_app:app"
DURATION = 22.0
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
        # Counted from when both nodes hand off (their start-up on a busy machine is not the subject).
        harness.wait_until(
            lambda: {r.node for r in harness.history(store) if r.status is not RunStatus.SKIPPED} >= {"n1", "n2"},
            30,
            "both nodes to hand off",
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

    # >= 90 % of the expected fires ran. Expected: every second of every schedule from when
    # both nodes hand off to the last fire, except
    # the takeover gap of the schedules the killed node owned at the kill (their fires in that
    # gap pass unclaimed until the ring notices, as misfire = "skip" says).
    last = max(r.scheduled_for for r in rows)
    first = up.replace(microsecond=0) + timedelta(seconds=1)
    seconds = [first + timedelta(seconds=s) for s in range(int((last - first).total_seconds()))]
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


def _single_node(
    tmp_path: Path, store: dict[str, str], broker_url: str, **options: object
) -> tuple[Path, str, Path, dict[str, str]]:
    queue, log = harness.queue_name(), tmp_path / "executions.jsonl"
    table = {"app": APP, "queue": queue, **options}
    config = harness.write_config(tmp_path / "n1.toml", store, "n1", "celery", table)
    return config, queue, log, harness.env_for(config, log, HANDOFF_BROKER=broker_url)


def test_a_message_redelivered_after_its_worker_was_killed_does_not_run_the_fire_again(
    amqp_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    store_config = config_for("postgres", migrated=True)
    config, queue, log, env = _single_node(tmp_path, store_config.store, amqp_url)
    with harness.admin(config) as admin:
        # Yearly: it fires only when the test triggers it.
        admin.add("slow", "0 0 1 1 *", "handoff.slow", executor="celery", args={"seconds": 30})
    store = store_config.build_store()
    store.open()
    # Prefork, as most users run it; handoff.slow has acks_late=True.
    first = harness.celery_worker(queue, env, tmp_path / "w1.log", pool="prefork", concurrency=1, name="w1")
    node = harness.start_node(config, 60, env, tmp_path / "n1.log")
    second = None
    try:
        node_log = tmp_path / "n1.log"
        harness.wait_until(lambda: "node n1 starting" in node_log.read_text(), 30, "the node to start")
        with harness.admin(config) as admin:
            admin.trigger("slow")
        harness.wait_until(lambda: len(harness.executions(log)) == 1, 30, "the task to start")
        harness.kill(first)  # mid-task: the message was never acknowledged
        second = harness.celery_worker(queue, env, tmp_path / "w2.log", pool="prefork", concurrency=1, name="w2")
        harness.wait_until(
            lambda: [r.status for r in harness.history(store)] == [RunStatus.FAILED], 60, "the redelivery's report"
        )
        (run,) = harness.history(store)
        time.sleep(2.0)  # room for a wrong second execution to show up in the log
        done = harness.executions(log)
    finally:
        harness.stop(node)
        for worker in (first, second):
            if worker is not None:
                harness.kill(worker)
        store.close()
    logs = harness.tails([tmp_path / "w1.log", tmp_path / "w2.log", tmp_path / "n1.log"])
    assert [(e["schedule"], e.get("phase")) for e in done] == [("slow", "start")], logs
    assert run.error == LOST, logs
    assert "not running slow" in (tmp_path / "w2.log").read_text(), logs


def test_fires_are_skipped_while_a_slow_task_runs(redis_url: str, tmp_path: Path, config_for: ConfigFor) -> None:
    store_config = config_for("postgres", migrated=True)
    config, queue, log, env = _single_node(tmp_path, store_config.store, redis_url)
    with harness.admin(config) as admin:
        admin.add("slow", "* * * * * *", "handoff.slow", executor="celery", args={"seconds": 3.5})
    store = store_config.build_store()
    store.open()
    worker = harness.celery_worker(queue, env, tmp_path / "worker.log")
    node = harness.start_node(config, 10, env, tmp_path / "n1.log")
    try:
        assert node.wait(timeout=60) == 0
        rows = harness.settled(store)
    finally:
        harness.kill(node)
        harness.stop(worker)
        store.close()
    logs = harness.tails([tmp_path / "worker.log", tmp_path / "n1.log"])
    done = harness.executions(log)
    spans = sorted(
        (start["at"], end["at"])
        for start in done
        if start["phase"] == "start"
        for end in done
        if end["phase"] == "end" and end["message_id"] == start["message_id"]
    )
    assert len(spans) >= 2, logs
    # Never two executions of the schedule at once, across the queue.
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    skipped = [r for r in rows if r.status is RunStatus.SKIPPED and "previous hand-off" in (r.error or "")]
    assert len(skipped) >= 2, rows
    assert {r.status for r in rows} <= {RunStatus.SUCCEEDED, RunStatus.SKIPPED}, rows


def test_a_broker_outage_fails_attempts_and_never_stops_the_node(tmp_path: Path, config_for: ConfigFor) -> None:
    broker = ThrowawayRedis().start()  # of this test's own: it is stopped for 10 s
    store_config = config_for("postgres", migrated=True)
    config, queue, log, env = _single_node(
        tmp_path, store_config.store, broker.url, report_timeout=5, publish_timeout=2
    )
    with harness.admin(config) as admin:
        for i in range(3):
            admin.add(f"w{i}", "* * * * * *", "handoff.work", executor="celery", args={"n": i})
    store = store_config.build_store()
    store.open()
    worker = harness.celery_worker(queue, env, tmp_path / "worker.log")
    node = harness.start_node(config, 26, env, tmp_path / "n1.log")
    try:
        time.sleep(6.0)
        broker.stop()
        down = store.now()
        time.sleep(10.0)
        assert node.poll() is None, "the node stopped during the broker outage"
        broker.start()
        up = store.now()
        assert node.wait(timeout=60) == 0
        rows = harness.settled(store)
    finally:
        harness.kill(node)
        harness.stop(worker)
        broker.close()
        store.close()
    logs = harness.tails([tmp_path / "worker.log", tmp_path / "n1.log"])
    failed = [r for r in rows if r.status is RunStatus.FAILED]
    assert failed, logs
    # Each failed attempt is a publish the outage refused, with the broker's error in the history.
    for r in failed:
        assert (r.error or "").startswith("not handed off: "), r
        assert down - timedelta(seconds=2) <= r.scheduled_for <= up + timedelta(seconds=2), (r, down, up)
    # After the outage every schedule is handed off, and run, again.
    after = {
        r.schedule for r in rows if r.status is RunStatus.SUCCEEDED and r.scheduled_for > up + timedelta(seconds=3)
    }
    assert after == {"w0", "w1", "w2"}, logs
    ran = {(e["schedule"], e["scheduled_for"]) for e in harness.executions(log)}
    assert {(r.schedule, r.scheduled_for.isoformat()) for r in rows if r.status is RunStatus.SUCCEEDED} == ran
