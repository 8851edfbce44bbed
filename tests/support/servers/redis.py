"""Redis for the hand-off tests, a pytest plugin (loaded by ``tests/conftest.py``).

``redis_url`` (session): ``redis://...`` of the broker chosen as ``brokers.py`` says
(``TICKWORK_TEST_REDIS_URL``, else 127.0.0.1:6379, else a throwaway ``redis-server``).
:class:`ThrowawayRedis` is a broker of a test's own (one it may stop and start).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.support.servers.brokers import ThrowawayBroker, choose

DEFAULT_URL = "redis://127.0.0.1:6379/0"


def reachable(url: str) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.RedisError:
        return False


class ThrowawayRedis(ThrowawayBroker):
    label = "Redis"
    program = "redis-server"

    def argv(self, program: str) -> list[str]:
        # No persistence: a restart (an outage) comes back empty, like a lost broker.
        return [program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.base_dir)]  # fmt: skip

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def answers(self) -> bool:
        return reachable(self.url)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url, broker = choose("TICKWORK_TEST_REDIS_URL", DEFAULT_URL, reachable, ThrowawayRedis)
    yield url
    if broker is not None:
        broker.close()
