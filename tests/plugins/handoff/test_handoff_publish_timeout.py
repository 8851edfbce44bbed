"""``publish_timeout`` of every hand-off executor against a Redis that stops answering without
closing its connections (a throwaway ``redis-server`` frozen with SIGSTOP: what a failed-over
broker or a dropped network path looks like to a client). An embedded node; no worker needed.

Without a bound the publish would wait for ever, its run ``running`` and its thread lost; with it,
each attempt made while Redis is frozen ends ``failed`` with the client's timeout, and the node
hands off again once Redis answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dramatiq.brokers.redis import RedisBroker

import tickwork
from tests.support.handoff import harness, local_app
from tests.support.servers.redis import ThrowawayRedis
from tickwork.structures import RunStatus

pytestmark = pytest.mark.slow


@pytest.fixture
def frozen_redis() -> Iterator[ThrowawayRedis]:
    broker = ThrowawayRedis()
    broker.start()
    yield broker
    broker.close()


def _celery(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, Any], str]:
    monkeypatch.setattr(local_app.configurable.conf, "broker_url", url)
    return "celery", {"app": "tests.support.handoff.local_app:configurable"}, "proj.tasks.report"


def _rq(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, Any], str]:
    return "rq", {"url": url, "queue": harness.queue_name()}, "proj.tasks.report"


def _dramatiq(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, Any], str]:
    monkeypatch.setattr(local_app, "dramatiq_broker", RedisBroker(url=url), raising=False)
    return "dramatiq", {"broker": "tests.support.handoff.local_app:dramatiq_broker"}, "report"


@pytest.mark.parametrize("make", [_celery, _rq, _dramatiq], ids=["celery", "rq", "dramatiq"])
def test_a_publish_to_a_redis_that_stopped_answering_fails_within_publish_timeout(
    make: Callable[[str, pytest.MonkeyPatch], tuple[str, dict[str, Any], str]],
    frozen_redis: ThrowawayRedis,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    executor, table, target = make(frozen_redis.url, monkeypatch)
    node = tickwork.Node.from_config(
        {
            "scheduler": {"node_id": "n1"},
            "store": {"plugin": "sqlite", "path": str(tmp_path / "t.db")},
            # No overlap check: nothing consumes the messages, and every fire must be published.
            "executor": {executor: {**table, "publish_timeout": 1, "no_overlap": False}},
        }
    )

    def statuses() -> list[tuple[RunStatus, str | None]]:
        return [(r.status, r.error) for r in reversed(node.store.history(limit=1000, schedule="s"))]

    def ended(status: RunStatus) -> list[str | None]:
        return [error for s, error in statuses() if s is status]

    with node:
        node.admin.add("s", "* * * * * *", target, executor=executor)
        # Connected and publishing: the connections the freeze leaves open are in the pool.
        harness.wait_until(lambda: len(ended(RunStatus.SUBMITTED)) >= 2, 30, "two hand-offs")
        frozen_redis.pause()
        try:
            harness.wait_until(lambda: len(ended(RunStatus.FAILED)) >= 2, 30, "attempts failed by the timeout")
        finally:
            frozen_redis.resume()
        assert node.running
        handed_off = len(ended(RunStatus.SUBMITTED))
        harness.wait_until(lambda: len(ended(RunStatus.SUBMITTED)) > handed_off + 1, 30, "hand-offs after the thaw")
        failed = ended(RunStatus.FAILED)
    # The client's own words: a timeout, never a refused connection (Redis never went away).
    assert all((error or "").startswith("not handed off: ") and "imeout" in (error or "") for error in failed), failed
