"""The ``rq`` executor when things break: a worker killed mid-job (whole, or only its work
horse), a job delivered again with ``rq requeue``, the Redis broker down for 10 s under a running
node. Real ``rq worker`` processes, a real Redis, tickwork's history and the jobs' own log."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis
from rq import Queue as Queue_
from rq.registry import StartedJobRegistry

from tests.support.handoff import harness, scenarios
from tests.support.handoff.cluster import Queue
from tests.support.servers.configs import ConfigFor
from tickwork.structures import RunStatus
from tickwork_handoff.reporter import LOST
from tickwork_rq.worker import ABANDONED

pytestmark = pytest.mark.slow

SLOW = "tests.support.handoff.rq_jobs.slow"


def _queue(url: str, name: str, worker_class: str = "Worker", *options: str, restart: bool = False) -> Queue:
    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        return [harness.rq_worker(url, name, env, logs / "rq1.log", "rq1", worker_class, *options, restart=restart)]

    jobs = "tests.support.handoff.rq_jobs"
    return Queue("rq", {"url": url, "queue": name}, f"{jobs}.work", f"{jobs}:boom",
                 workers, {}, SLOW)  # fmt: skip


def _lapse_heartbeats(url: str, name: str) -> None:
    """Move the expiry of every execution in the queue's started registry to a second ago: what
    RQ's registry holds 61 s after a dead worker's last heartbeat (RQ adds a fixed 60 s to each
    heartbeat's lifetime, not configurable), without the test waiting that minute. The cleanups
    that follow (a worker's maintenance, ``rq info``) are RQ's own, unchanged."""
    client = redis.Redis.from_url(url)
    try:
        key = StartedJobRegistry(name, connection=client).key
        members = client.zrange(key, 0, -1)
        assert members, f"no execution in {key}: the job is not in RQ's started registry"
        client.zadd(key, dict.fromkeys(members, time.time() - 1), xx=True)
    finally:
        client.close()


def _wait_for_maintenance(url: str, name: str, log: Path) -> None:
    """Until a worker started with ``log`` has run its registry maintenance of the queue ``name``
    (it logs the start and holds RQ's cleaning lock until the end)."""
    client = redis.Redis.from_url(url)
    try:
        key = Queue_(name, connection=client).registry_cleaning_key
        harness.wait_until(
            lambda: (
                f"cleaning registries for queue: {name}" in log.read_text(errors="replace") and not client.exists(key)
            ),
            30,
            "the worker's registry maintenance",
        )
    finally:
        client.close()


def _rq(*argv: str, env: dict[str, str]) -> str:
    """One ``rq`` command, as a user types it; its output."""
    done = subprocess.run([str(harness.BIN / "rq"), *argv], env=env, capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("cleanup", ["worker", "rq-info"])
def test_a_job_whose_worker_died_is_recorded_lost_and_a_requeue_does_not_run_it_again(
    cleanup: str, redis_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    """RQ's started registry keeps the job of a dead worker until its heartbeat lapses; the next
    cleanup of that registry fails it with AbandonedJobError. ``worker``: a tickwork worker's
    maintenance runs the cleanup and records the run lost at once. ``rq-info``: ``rq info`` runs it
    (counting the registry cleans it), which tells tickwork nothing: the run stays ``started``
    until the job is delivered again (``rq requeue``), which records it lost and does not run it."""
    name = harness.queue_name()
    queue = _queue(redis_url, name, "Worker", "--job-monitoring-interval", "1")
    store_config = config_for("postgres", migrated=True)
    config, log, env = scenarios.single_node(tmp_path, store_config.store, queue)
    with harness.admin(config) as admin:
        # Yearly: it fires only when the test triggers it.
        admin.add("slow", "0 0 1 1 *", SLOW, executor="rq", args={"seconds": 30})
    store = store_config.build_store()
    store.open()
    (first,) = queue.start_workers(env, tmp_path)
    node = harness.start_node(config, 150, env, tmp_path / "n1.log")
    second = None
    try:
        scenarios.wait_for_node(tmp_path / "n1.log")
        with harness.admin(config) as admin:
            admin.trigger("slow")
        harness.wait_until(lambda: len(harness.executions(log)) == 1, 30, "the job to start")
        (started,) = harness.executions(log)
        # The machine under the worker dies: the worker and its work horse (a process group of
        # its own), with nothing reported and the job left in RQ's started registry.
        os.kill(started["pid"], signal.SIGKILL)
        harness.kill(first)
        assert [r.status for r in harness.history(store)] == [RunStatus.STARTED]
        if cleanup == "worker":
            # Registry maintenance every second (a dequeue returns at least every 5 s with this
            # worker TTL): the job is found abandoned once its heartbeat lapsed.
            _lapse_heartbeats(redis_url, name)
            second = harness.rq_worker(redis_url, name, env, tmp_path / "rq2.log", "rq2", "Worker",
                                       "--maintenance-interval", "1", "--worker-ttl", "20")  # fmt: skip
            harness.wait_until(
                lambda: [r.status for r in harness.history(store)] == [RunStatus.FAILED], 120, "RQ's cleanup's report"
            )
        else:
            # Its maintenance ran at its start, before the heartbeat lapsed; the next is 10 min away.
            second = harness.rq_worker(redis_url, name, env, tmp_path / "rq2.log", "rq2")
            _wait_for_maintenance(redis_url, name, tmp_path / "rq2.log")
            _lapse_heartbeats(redis_url, name)
            harness.wait_until(
                lambda: "0 executing, 0 finished, 1 failed" in _rq("info", "-u", redis_url, "--raw", name, env=env),
                120,
                "rq info's cleanup to fail the abandoned job",
            )
            assert [r.status for r in harness.history(store)] == [RunStatus.STARTED]
        # What a user does with a failed job: requeue it. It is delivered again, and refused.
        requeued = _rq("requeue", "-u", redis_url, "--queue", name, "--all", env=env)
        harness.wait_until(
            lambda: "not running slow" in (tmp_path / "rq2.log").read_text(errors="replace"), 30, "the refusal"
        )
        time.sleep(2.0)  # room for a wrong second execution to show up in the log
        done = harness.executions(log)
        (run,) = harness.history(store)
    finally:
        harness.stop(node)
        for worker in (first, second):
            if worker is not None:
                harness.kill(worker)
        store.close()
    logs = harness.tails([tmp_path / "rq1.log", tmp_path / "rq2.log", tmp_path / "n1.log"])
    assert "Requeueing 1 jobs from failed queue" in requeued, requeued
    assert [(e["schedule"], e.get("phase")) for e in done] == [("slow", "start")], logs
    assert run.status is RunStatus.FAILED, logs
    assert run.error == (f"the worker running it was lost: {ABANDONED}" if cleanup == "worker" else LOST), logs


def test_a_work_horse_killed_mid_job_is_recorded_lost(redis_url: str, tmp_path: Path, config_for: ConfigFor) -> None:
    name = harness.queue_name()
    queue = _queue(redis_url, name)
    store_config = config_for("postgres", migrated=True)
    config, log, env = scenarios.single_node(tmp_path, store_config.store, queue)
    with harness.admin(config) as admin:
        admin.add("slow", "0 0 1 1 *", SLOW, executor="rq", args={"seconds": 30})
    store = store_config.build_store()
    store.open()
    workers = queue.start_workers(env, tmp_path)
    node = harness.start_node(config, 60, env, tmp_path / "n1.log")
    try:
        scenarios.wait_for_node(tmp_path / "n1.log")
        with harness.admin(config) as admin:
            admin.trigger("slow")
        harness.wait_until(lambda: len(harness.executions(log)) == 1, 30, "the job to start")
        (started,) = harness.executions(log)
        os.kill(started["pid"], signal.SIGKILL)  # the work horse, not the worker
        harness.wait_until(
            lambda: [r.status for r in harness.history(store)] == [RunStatus.FAILED], 30, "the worker's report"
        )
        (run,) = harness.history(store)
        recorded = store.get_run(run.id)
    finally:
        harness.stop(node)
        for worker in workers:
            harness.stop(worker)
        store.close()
    logs = harness.tails([tmp_path / "rq1.log", tmp_path / "n1.log"])
    horse = f"RQ's work horse (pid {started['pid']}, signal {int(signal.SIGKILL)}) ended before the job reported"
    assert run.error == f"the worker running it was lost: {horse}", logs
    # The history names the RQ worker that ran it (`rq worker -n rq1-QUEUE`), as `rq info` does.
    assert recorded is not None and recorded.worker == f"rq1-{name}", logs


def test_a_broker_outage_fails_attempts_and_never_stops_the_node(tmp_path: Path, config_for: ConfigFor) -> None:
    # The no-fork worker: twenty short jobs a second would be mostly forks on two busy cores.
    # Restarted when it exits, as in production: RQ's worker quits when its heartbeat after a
    # job meets the outage ("found an unhandled exception, quitting").
    scenarios.broker_outage(
        tmp_path, config_for, lambda url: _queue(url, harness.queue_name(), "SimpleWorker", restart=True)
    )
