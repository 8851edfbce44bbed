"""The ``celery`` executor's batches (docs/handoff.md#batches) when the connection to RabbitMQ
breaks in the middle of one: a real node, a real ``celery worker``, the session's RabbitMQ.

The node reaches RabbitMQ through a TCP proxy (tests/support/tcp_proxy.py) that forwards the
first bytes of a batch and then closes the connection: the messages in those bytes reach the
broker, their confirmations do not reach the node, which sends every unconfirmed message again
on a new connection with the same id (the fire's). So the broker holds two copies of some fires;
the worker side must run one of each (tests/support/handoff/scenarios.py ``broken_batch``). The
worker connects to RabbitMQ directly.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.handoff import harness, scenarios
from tests.support.handoff.cluster import Queue
from tests.support.servers.configs import ConfigFor

pytestmark = pytest.mark.slow

APP = "tests.support.handoff.celery_app:app"


def test_a_batch_broken_mid_way_is_sent_again_and_every_fire_runs_once(
    amqp_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    name = harness.queue_name()

    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        return [harness.celery_worker(name, env, logs / "worker.log", concurrency=8)]

    queue = Queue("celery", {"app": APP, "queue": name}, "handoff.work", "handoff.boom", workers,
                  {"HANDOFF_BROKER": amqp_url})  # fmt: skip
    # The app module reads its broker from the environment: the node's points at the proxy.
    seen = scenarios.broken_batch(tmp_path, config_for, amqp_url, queue, lambda url: ({}, {"HANDOFF_BROKER": url}))
    scenarios.every_fire_ran_once(seen)
    # The node sent the unconfirmed messages of the broken batch again, with the same ids ...
    assert "the connection broke during a batch" in seen.node_log, seen.node_log[-3000:]
    # ... some of which had reached the broker: their second copies were refused by the worker
    # side (tickwork_handoff.reporter logs each refusal), which is what kept each fire to one run.
    assert seen.worker_log.count("tickwork: not running") >= 1, seen.worker_log[-3000:]
