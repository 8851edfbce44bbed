"""The ``dramatiq`` executor against real brokers and a real ``dramatiq`` worker process (the
cluster scenario of tests/support/handoff/cluster.py, over RabbitMQ and over Redis)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.handoff import cluster, harness
from tests.support.servers.configs import ConfigFor

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("broker", ["amqp", "redis"])
def test_two_nodes_hand_every_fire_once_to_a_dramatiq_worker_while_one_node_is_killed(
    broker: str, request: pytest.FixtureRequest, tmp_path: Path, config_for: ConfigFor
) -> None:
    broker_url = request.getfixturevalue("amqp_url" if broker == "amqp" else "redis_url")
    queue = harness.queue_name()

    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        return [harness.dramatiq_worker(queue, env, logs / "worker.log")]

    cluster.run(
        tmp_path,
        config_for,
        cluster.Queue(
            "dramatiq",
            {"broker": "tests.support.handoff.dramatiq_app:broker"},
            "tests.support.handoff.dramatiq_app:work",
            "tests.support.handoff.dramatiq_app:boom",
            workers,
            {"HANDOFF_BROKER": broker_url, "HANDOFF_QUEUE": queue},
        ),
    )
