"""The ``rq`` executor against a real Redis and real ``rq worker`` processes (the cluster scenario
of tests/support/handoff/cluster.py, and a slow job: tests/support/handoff/scenarios.py). Faults:
tests/plugins/rq/test_handoff_rq_faults.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.handoff import cluster, harness, scenarios
from tests.support.servers.configs import ConfigFor

pytestmark = pytest.mark.slow


def test_two_nodes_hand_every_fire_once_to_rq_workers_while_one_node_is_killed(
    redis_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    queue = harness.queue_name()

    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        # Twenty jobs a second: RQ's forking worker spends more than that on forks on two busy
        # cores, so this scenario runs the no-fork worker; the slow-job test runs the forking one.
        return [harness.rq_worker(redis_url, queue, env, logs / f"rq{i}.log", f"rq{i}", "SimpleWorker") for i in (1, 2)]

    cluster.run(
        tmp_path,
        config_for,
        cluster.Queue("rq", {"url": redis_url, "queue": queue}, "tests.support.handoff.rq_jobs.work",
                      "tests.support.handoff.rq_jobs:boom", workers, {}),
    )  # fmt: skip


def test_fires_are_skipped_while_a_slow_rq_job_runs(redis_url: str, tmp_path: Path, config_for: ConfigFor) -> None:
    queue = harness.queue_name()

    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        # Two free workers (RQ's forking one), yet never two executions of the schedule at once.
        return [harness.rq_worker(redis_url, queue, env, logs / f"rq{i}.log", f"rq{i}") for i in (1, 2)]

    scenarios.slow_task_is_skipped(
        tmp_path,
        config_for,
        cluster.Queue("rq", {"url": redis_url, "queue": queue}, "tests.support.handoff.rq_jobs.work",
                      "tests.support.handoff.rq_jobs:boom", workers, {}, "tests.support.handoff.rq_jobs.slow"),
    )  # fmt: skip
