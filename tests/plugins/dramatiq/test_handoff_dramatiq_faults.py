"""The ``dramatiq`` executor when things break: a worker killed mid-task (the broker delivers its
message again), a task slower than its period, the Redis broker down for 10 s under a running
node. Real ``dramatiq`` workers, real brokers, tickwork's history and the tasks' own log."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.handoff import harness, scenarios
from tests.support.handoff.cluster import Queue
from tests.support.servers.configs import ConfigFor
from tickwork.structures import RunStatus
from tickwork_handoff.reporter import LOST

pytestmark = pytest.mark.slow

BROKER = "tests.support.handoff.dramatiq_app:broker"
SLOW = "tests.support.handoff.dramatiq_app:slow"


def _queue(url: str, name: str, **env: str) -> Queue:
    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        return [harness.dramatiq_worker(name, env, logs / "worker.log")]

    app = "tests.support.handoff.dramatiq_app"
    return Queue("dramatiq", {"broker": BROKER}, f"{app}:work", f"{app}:boom",
                 workers, {"HANDOFF_BROKER": url, "HANDOFF_QUEUE": name, **env}, SLOW)  # fmt: skip


@pytest.mark.parametrize("broker", ["amqp", "redis"])
def test_a_message_redelivered_after_its_worker_was_killed_does_not_run_the_fire_again(
    broker: str, request: pytest.FixtureRequest, tmp_path: Path, config_for: ConfigFor
) -> None:
    # RabbitMQ requeues a dead consumer's unacknowledged message at once, marked redelivered.
    # Dramatiq's Redis broker requeues it once the worker missed its heartbeats for
    # heartbeat_timeout (60 s by default; 3 s in this test's app).
    url = request.getfixturevalue("amqp_url" if broker == "amqp" else "redis_url")
    name = harness.queue_name()
    queue = _queue(url, name, HANDOFF_REDIS_HEARTBEAT_MS="3000")
    store_config = config_for("postgres", migrated=True)
    config, log, env = scenarios.single_node(tmp_path, store_config.store, queue)
    with harness.admin(config) as admin:
        # Yearly: it fires only when the test triggers it.
        admin.add("slow", "0 0 1 1 *", SLOW, executor="dramatiq", args={"seconds": 30})
    store = store_config.build_store()
    store.open()
    first = harness.dramatiq_worker(name, env, tmp_path / "w1.log")
    node = harness.start_node(config, 90, env, tmp_path / "n1.log")
    second = None
    try:
        scenarios.wait_for_node(tmp_path / "n1.log")
        with harness.admin(config) as admin:
            admin.trigger("slow")
        harness.wait_until(lambda: len(harness.executions(log)) == 1, 30, "the task to start")
        harness.kill(first)  # mid-task: the message was never acknowledged
        second = harness.dramatiq_worker(name, env, tmp_path / "w2.log")
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
    # The history names the worker process that ran it (host:pid, the pid the task itself
    # logged), not the second worker whose start was refused.
    assert recorded is not None and recorded.worker == f"{socket.gethostname()}:{done[0]['pid']}", logs


def test_fires_are_skipped_while_a_slow_dramatiq_task_runs(
    redis_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    scenarios.slow_task_is_skipped(tmp_path, config_for, _queue(redis_url, harness.queue_name()))


def test_a_broker_outage_fails_attempts_and_never_stops_the_node(tmp_path: Path, config_for: ConfigFor) -> None:
    scenarios.broker_outage(tmp_path, config_for, lambda url: _queue(url, harness.queue_name()))
