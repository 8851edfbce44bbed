"""The ``celery`` executor against real brokers and real ``celery -A ... worker`` processes.

Every test judges from two independent records: the line each task execution appends to a file
(the worker's own log, tests/support/handoff/jobs.py) and tickwork's history table.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.support.handoff import cluster, harness, scenarios
from tests.support.servers.configs import ConfigFor
from tickwork.errors import TickworkError
from tickwork.structures import RunStatus
from tickwork_handoff.reporter import LOST

pytestmark = pytest.mark.slow

APP = "tests.support.handoff.celery_app:app"


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


def _queue(broker_url: str) -> cluster.Queue:
    """A fresh queue of the test app on ``broker_url``, one worker (threads pool)."""
    queue = harness.queue_name()

    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        return [harness.celery_worker(queue, env, logs / "worker.log")]

    return cluster.Queue("celery", {"app": APP, "queue": queue}, "handoff.work", "handoff.boom", workers,
                         {"HANDOFF_BROKER": broker_url}, "handoff.slow")  # fmt: skip


def _single_node(
    tmp_path: Path, store: dict[str, str], broker_url: str, **options: object
) -> tuple[Path, str, Path, dict[str, str]]:
    queue = _queue(broker_url)
    config, log, env = scenarios.single_node(tmp_path, store, queue, **options)
    return config, queue.table["queue"], log, env


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
        recorded = store.get_run(run.id)
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
    # The history names the worker that ran it (its Celery node name, -n w1-QUEUE@%h), not the
    # one whose start was refused.
    assert recorded is not None and recorded.worker == f"w1-{queue}@{socket.gethostname()}", logs


def test_fires_are_skipped_while_a_slow_task_runs(redis_url: str, tmp_path: Path, config_for: ConfigFor) -> None:
    scenarios.slow_task_is_skipped(tmp_path, config_for, _queue(redis_url))


def test_a_broker_outage_fails_attempts_and_never_stops_the_node(tmp_path: Path, config_for: ConfigFor) -> None:
    scenarios.broker_outage(tmp_path, config_for, _queue)


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


@pytest.mark.parametrize("broker", ["amqp", "redis"])
def test_a_whole_call_in_arguments_reaches_the_task_as_import_celery_beat_writes_it(
    broker: str, request: pytest.FixtureRequest, tmp_path: Path, config_for: ConfigFor
) -> None:
    # `tickwork import celery-beat` writes {"args", "kwargs", "options"}: positional arguments and
    # the entry's own apply_async options (here its queue) must reach the worker as beat sent them.
    # Over RabbitMQ the message is built from the batch's template (tickwork_celery.messages) and
    # its header table encoded by tickwork_celery.properties.
    broker_url = request.getfixturevalue("amqp_url" if broker == "amqp" else "redis_url")
    store_config = config_for("postgres", migrated=True)
    config, queue, log, env = _single_node(tmp_path, store_config.store, broker_url, queue="not-this-one", expires=300)
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
    # The header django-celery-beat's scheduler sets names the schedule.
    assert done["periodic_task_name"] == "imported", logs
    # Protocol 2's own headers, as send_task writes them for a message sent outside a task.
    assert done["root_id"] == done["message_id"] and done["parent_id"] is None, done
    assert done["origin"], done
    expires = datetime.fromisoformat(done["expires"]).timestamp()
    assert 0 < expires - done["at"] <= 300, done
    assert [r.status for r in rows] == [RunStatus.SUCCEEDED], logs
