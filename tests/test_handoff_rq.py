"""The ``rq`` executor against a real Redis and real ``rq worker`` processes (the cluster scenario
of tests/handoff/cluster.py, and a slow job)."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from tests.handoff import cluster, harness
from tests.servers.configs import ConfigFor
from tickwork.structures import RunStatus

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
        cluster.Queue("rq", {"url": redis_url, "queue": queue}, "tests.handoff.rq_jobs.work",
                      "tests.handoff.rq_jobs:boom", workers, {}),
    )  # fmt: skip


def test_fires_are_skipped_while_a_slow_rq_job_runs(redis_url: str, tmp_path: Path, config_for: ConfigFor) -> None:
    store_config = config_for("postgres", migrated=True)
    queue, log = harness.queue_name(), tmp_path / "executions.jsonl"
    config = harness.write_config(
        tmp_path / "n1.toml", store_config.store, "n1", "rq", {"url": redis_url, "queue": queue}
    )
    env = harness.env_for(config, log)
    with harness.admin(config) as admin:
        admin.add("slow", "* * * * * *", "tests.handoff.rq_jobs.slow", executor="rq", args={"seconds": 3.5})
    store = store_config.build_store()
    store.open()
    workers = [harness.rq_worker(redis_url, queue, env, tmp_path / f"rq{i}.log", f"rq{i}") for i in (1, 2)]
    node = harness.start_node(config, 10, env, tmp_path / "n1.log")
    try:
        assert node.wait(timeout=60) == 0
        rows = harness.settled(store)
    finally:
        harness.kill(node)
        for worker in workers:
            harness.stop(worker)
        store.close()
    done = harness.executions(log)
    spans = sorted(
        (start["at"], end["at"])
        for start in done
        if start["phase"] == "start"
        for end in done
        if end["phase"] == "end" and end["message_id"] == start["message_id"]
    )
    assert len(spans) >= 2, harness.tails(sorted(tmp_path.glob("*.log")))
    # Two workers are free, yet never two executions of the schedule at once.
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    assert len([r for r in rows if r.status is RunStatus.SKIPPED and "previous hand-off" in (r.error or "")]) >= 2
    assert {r.status for r in rows} <= {RunStatus.SUCCEEDED, RunStatus.SKIPPED}, rows
