"""The ``celery`` executor against real brokers and real ``celery -A ... worker`` processes.

Every test judges from two independent records: the line each task execution appends to a file
(the worker's own log, tests/handoff/jobs.py) and tickwork's history table.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.handoff import cluster, harness
from tests.servers.configs import ConfigFor
from tests.servers.redis import ThrowawayRedis
from tickwork.errors import TickworkError
from tickwork.structures import RunStatus
from tickwork_handoff.reporter import LOST

pytestmark = pytest.mark.slow

APP = "tests.handoff.celery_app:app"


@pytest.mark.parametrize("broker", ["amqp", "redis"])
def test_two_nodes_hand_every_fire_once_to_a_worker_while_one_node_is_killed(
    broker: str, request: pytest.FixtureRequest, tmp_path: Path, config_for: ConfigFor
) -> None:
    broker_url = request.getfixturevalue("amqp_url" if broker == "amqp" else "redis_url")
    queue = harness.queue_name()

    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        return [harness.celery_worker(queue, env, logs / "worker.log")]

    cluster.run(
        tmp_path,
        config_for,
        cluster.Queue("celery", {"app": APP, "queue": queue}, "handoff.work", "handoff.boom", workers,
                      {"HANDOFF_BROKER": broker_url}),
    )  # fmt: skip


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
    # Long enough after the outage for the worker to reconnect (its back-off grows while Redis is away).
    node = harness.start_node(config, 34, env, tmp_path / "n1.log")
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


def test_a_task_retried_by_celery_runs_again_and_ends_as_its_retry_did(
    redis_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    store_config = config_for("postgres", migrated=True)
    config, queue, log, env = _single_node(tmp_path, store_config.store, redis_url)
    with harness.admin(config) as admin:
        admin.add("flaky", "0 0 1 1 *", "handoff.flaky", executor="celery")
    store = store_config.build_store()
    store.open()
    worker = harness.celery_worker(queue, env, tmp_path / "worker.log")
    node = harness.start_node(config, 60, env, tmp_path / "n1.log")
    try:
        node_log = tmp_path / "n1.log"
        harness.wait_until(lambda: "node n1 starting" in node_log.read_text(), 30, "the node to start")
        with harness.admin(config) as admin:
            admin.trigger("flaky")
        harness.wait_until(
            lambda: [r.status for r in harness.history(store)] == [RunStatus.SUCCEEDED], 60, "the retry's report"
        )
        done = harness.executions(log)
    finally:
        harness.stop(node)
        harness.stop(worker)
        store.close()
    # Celery's retry is the same message id delivered again on purpose: it ran once per retry.
    assert [(e["schedule"], e["retries"]) for e in done] == [("flaky", 0), ("flaky", 1)]
    assert len({e["message_id"] for e in done}) == 1


def test_a_pool_child_killed_mid_task_is_recorded_failed(amqp_url: str, tmp_path: Path, config_for: ConfigFor) -> None:
    store_config = config_for("postgres", migrated=True)
    config, queue, log, env = _single_node(tmp_path, store_config.store, amqp_url)
    with harness.admin(config) as admin:
        admin.add("slow", "0 0 1 1 *", "handoff.slow", executor="celery", args={"seconds": 30})
    store = store_config.build_store()
    store.open()
    worker = harness.celery_worker(queue, env, tmp_path / "worker.log", pool="prefork", concurrency=1)
    node = harness.start_node(config, 60, env, tmp_path / "n1.log")
    try:
        node_log = tmp_path / "n1.log"
        harness.wait_until(lambda: "node n1 starting" in node_log.read_text(), 30, "the node to start")
        with harness.admin(config) as admin:
            admin.trigger("slow")
        harness.wait_until(lambda: len(harness.executions(log)) == 1, 30, "the task to start")
        (started,) = harness.executions(log)
        os.kill(started["pid"], signal.SIGKILL)  # the pool child, not the worker
        harness.wait_until(
            lambda: [r.status for r in harness.history(store)] == [RunStatus.FAILED], 30, "the worker's report"
        )
        (run,) = harness.history(store)
    finally:
        harness.stop(node)
        harness.stop(worker)
        store.close()
    assert (run.error or "").startswith("WorkerLostError"), run


def test_a_whole_call_in_arguments_reaches_the_task_as_import_celery_beat_writes_it(
    redis_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    # `tickwork import celery-beat` writes {"args", "kwargs", "options"}: positional arguments and
    # the entry's own apply_async options (here its queue) must reach the worker as beat sent them.
    store_config = config_for("postgres", migrated=True)
    config, queue, log, env = _single_node(tmp_path, store_config.store, redis_url, queue="not-this-one")
    call = {"args": [7], "kwargs": {}, "options": {"queue": queue, "headers": {"from": "beat"}}}
    with harness.admin(config) as admin:
        admin.add("imported", "0 0 1 1 *", "handoff.work", executor="celery", args=call)
        with pytest.raises(TickworkError, match="option\\(s\\) link cannot be passed on"):
            admin.add("bad", "0 0 1 1 *", "handoff.work", executor="celery", args={**call, "options": {"link": "x"}})
    store = store_config.build_store()
    store.open()
    worker = harness.celery_worker(queue, env, tmp_path / "worker.log")
    node = harness.start_node(config, 60, env, tmp_path / "n1.log")
    try:
        node_log = tmp_path / "n1.log"
        harness.wait_until(lambda: "node n1 starting" in node_log.read_text(), 30, "the node to start")
        with harness.admin(config) as admin:
            admin.trigger("imported")
        harness.wait_until(lambda: len(harness.executions(log)) == 1, 30, "the task to run")
        rows = harness.settled(store)
    finally:
        harness.stop(node)
        harness.stop(worker)
        store.close()
    logs = harness.tails([tmp_path / "worker.log", tmp_path / "n1.log"])
    (done,) = harness.executions(log)
    assert (done["schedule"], done["n"]) == ("imported", 7), logs
    assert [r.status for r in rows] == [RunStatus.SUCCEEDED], logs
