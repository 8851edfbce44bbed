"""The ``rq`` executor's batches (docs/handoff.md#batches) when the connection to Redis breaks in
the middle of one: a real node, a real ``rq worker``, the session's Redis. The node reaches Redis
through a TCP proxy that forwards the first 40 kB of its traffic and then closes the connection
(tests/support/handoff/scenarios.py ``broken_batch``); the worker connects directly. A batch is one
``MULTI``/``EXEC``: Redis drops a transaction cut before its ``EXEC``, and the batch is sent again
on a new connection with the same job ids.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.handoff import harness, scenarios
from tests.support.handoff.cluster import Queue
from tests.support.servers.configs import ConfigFor

pytestmark = pytest.mark.slow

JOBS = "tests.support.handoff.rq_jobs"


def test_a_batch_broken_mid_way_runs_every_fire_once(redis_url: str, tmp_path: Path, config_for: ConfigFor) -> None:
    name = harness.queue_name()

    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        return [harness.rq_worker(redis_url, name, env, logs / f"rq{k}.log", f"rq{k}") for k in (1, 2)]

    queue = Queue("rq", {"url": redis_url, "queue": name}, f"{JOBS}.work", f"{JOBS}.boom", workers, {})
    seen = scenarios.broken_batch(tmp_path, config_for, redis_url, queue, lambda url: ({"url": url}, {}))
    scenarios.every_fire_ran_once(seen)
