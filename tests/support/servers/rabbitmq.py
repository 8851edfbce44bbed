"""RabbitMQ for the hand-off tests, a pytest plugin (loaded by ``tests/conftest.py``).

``amqp_url`` (session): ``amqp://...`` of the broker chosen as ``brokers.py`` says
(``TICKWORK_TEST_AMQP_URL``, else guest@127.0.0.1:5672, else a throwaway ``rabbitmq-server``:
its own node name, ports, database and logs in the temp directory).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kombu import Connection

from tests.support.servers.base import free_port
from tests.support.servers.brokers import ThrowawayBroker, choose

DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672//"


def reachable(url: str) -> bool:
    try:
        with Connection(url, connect_timeout=2) as conn:
            conn.ensure_connection(max_retries=1)
        return True
    except Exception:
        return False


class ThrowawayRabbitMQ(ThrowawayBroker):
    label = "RabbitMQ"
    program = "rabbitmq-server"

    def __init__(self) -> None:
        super().__init__()
        self.dist_port = free_port()

    def argv(self, program: str) -> list[str]:
        return [program]

    def env(self) -> dict[str, str]:
        base = str(self.base_dir)
        return {
            **super().env(),
            "RABBITMQ_NODENAME": f"tickwork{self.port}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": f"{base}/mnesia",
            "RABBITMQ_LOG_BASE": f"{base}/log",
            "RABBITMQ_PID_FILE": f"{base}/rabbit.pid",
            "RABBITMQ_CONFIG_FILE": f"{base}/rabbitmq",
            "RABBITMQ_ENABLED_PLUGINS_FILE": f"{base}/enabled_plugins",
            "RABBITMQ_LOGS": "-",
        }

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}//"

    def answers(self) -> bool:
        return reachable(self.url)


@pytest.fixture(scope="session")
def amqp_url() -> Iterator[str]:
    url, broker = choose("TICKWORK_TEST_AMQP_URL", DEFAULT_URL, reachable, ThrowawayRabbitMQ)
    yield url
    if broker is not None:
        broker.close()
