"""The single-node scenarios every hand-off executor is tested under (the cluster scenario is
tests/support/handoff/cluster.py): one tickwork node on PostgreSQL, real workers of the queue.

* :func:`slow_task_is_skipped`: a task longer than its period; the fires due while it runs are
  ``skipped`` (the previous hand-off is not final), and never two executions at once;
* :func:`broker_outage`: a throwaway Redis broker stopped for 10 s under the running node; the
  node stays up, the publishes refused meanwhile are failed attempts with the broker's error,
  nothing is left open, and every schedule is handed off and run again after;
* :func:`broken_batch`: the node's connection to the broker broken in the middle of a batch of
  200 fires due at once (a TCP proxy forwards its first bytes, then closes it); every fire runs
  once and ends ``succeeded`` (docs/handoff.md#batches).

Judged, like the cluster scenario, from the line each execution appends (tests/support/handoff/jobs.py)
and from tickwork's history.
"""

from __future__ import annotations

import collections
import itertools
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tests.support.handoff import harness
from tests.support.handoff.cluster import Queue
from tests.support.servers.configs import ConfigFor
from tests.support.servers.redis import ThrowawayRedis
from tests.support.tcp_proxy import TcpProxy
from tickwork.structures import RunStatus


def single_node(
    tmp_path: Path, store: dict[str, str], queue: Queue, /, **options: object
) -> tuple[Path, Path, dict[str, str]]:
    """Node ``n1``'s configuration (the queue's executor table plus ``options``), the executions
    log and the environment of its processes."""
    log = tmp_path / "executions.jsonl"
    config = harness.write_config(tmp_path / "n1.toml", store, "n1", queue.executor, {**queue.table, **options})
    return config, log, harness.env_for(config, log, **queue.env)


def wait_for_node(node_log: Path, node_id: str = "n1") -> None:
    harness.wait_until(
        lambda: node_log.exists() and f"node {node_id} starting" in node_log.read_text(), 30, "the node to start"
    )


def spans(done: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(start, end) of every execution of a slow task (tests/support/handoff/jobs.py ``slow``), in order."""
    return sorted(
        (start["at"], end["at"])
        for start in done
        if start.get("phase") == "start"
        for end in done
        if end.get("phase") == "end" and end["message_id"] == start["message_id"]
    )


def slow_task_is_skipped(tmp_path: Path, config_for: ConfigFor, queue: Queue) -> None:
    """A task of 3.5 s fired every second, for 10 s."""
    store_config = config_for("postgres", migrated=True)
    config, log, env = single_node(tmp_path, store_config.store, queue)
    with harness.admin(config) as admin:
        admin.add("slow", "* * * * * *", queue.slow, executor=queue.executor, args={"seconds": 3.5})
    store = store_config.build_store()
    store.open()
    workers = queue.start_workers(env, tmp_path)
    node = harness.start_node(config, 10, env, tmp_path / "n1.log")
    try:
        assert node.wait(timeout=60) == 0
        rows = harness.settled(store)
    finally:
        harness.kill(node)
        for worker in workers:
            harness.stop(worker)
        store.close()
    logs = harness.tails(sorted(tmp_path.glob("*.log")))
    ran = spans(harness.executions(log))
    assert len(ran) >= 2, logs
    # Never two executions of the schedule at once, across the queue (however many workers).
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(ran)), ran
    skipped = [r for r in rows if r.status is RunStatus.SKIPPED and "previous hand-off" in (r.error or "")]
    assert len(skipped) >= 2, rows
    assert {r.status for r in rows} <= {RunStatus.SUCCEEDED, RunStatus.SKIPPED}, rows


def broker_outage(tmp_path: Path, config_for: ConfigFor, queue_on: Callable[[str], Queue]) -> None:
    """``queue_on(url)``: the queue with the throwaway Redis at ``url`` as its broker."""
    broker = ThrowawayRedis().start()  # of this test's own: it is stopped for 10 s
    store = None
    try:
        queue = queue_on(broker.url)
        store_config = config_for("postgres", migrated=True)
        config, log, env = single_node(tmp_path, store_config.store, queue, report_timeout=5, publish_timeout=2)
        with harness.admin(config) as admin:
            for i in range(3):
                admin.add(f"w{i}", "* * * * * *", queue.work, executor=queue.executor, args={"n": i})
        store = store_config.build_store()
        store.open()
        workers = queue.start_workers(env, tmp_path)
        # Long enough after the outage for the workers to reconnect (their back-off grows while
        # Redis is away).
        node = harness.start_node(config, 40, env, tmp_path / "n1.log")
        try:
            # The outage starts once every schedule has been handed off and run (at least 6 s in):
            # a loaded machine may take longer than that to start the node, and a first fire still
            # waiting to be published would then fail before the window the test allows for it.
            started = time.monotonic()
            harness.wait_until(
                lambda: {e["schedule"] for e in harness.executions(log)} == {"w0", "w1", "w2"}, 60, "the first runs"
            )
            time.sleep(max(0.0, 6.0 - (time.monotonic() - started)))
            broker.stop()
            down = store.now()
            time.sleep(10.0)
            assert node.poll() is None, "the node stopped during the broker outage"
            broker.start()
            up = store.now()
            assert node.wait(timeout=60) == 0
            rows = harness.settled(store)
        finally:
            harness.kill(node)
            for worker in workers:
                harness.stop(worker)
    finally:
        broker.close()
        if store is not None:
            store.close()
    logs = harness.tails(sorted(tmp_path.glob("*.log")))
    failed = [r for r in rows if r.status is RunStatus.FAILED]
    assert failed, logs
    # Each failed attempt is a publish the outage refused, with the broker's error in the history.
    for r in failed:
        assert (r.error or "").startswith("not handed off: "), r
        assert down - timedelta(seconds=2) <= r.scheduled_for <= up + timedelta(seconds=2), (r, down, up)
    # After the outage every schedule is handed off, and run, again.
    after = {
        r.schedule for r in rows if r.status is RunStatus.SUCCEEDED and r.scheduled_for > up + timedelta(seconds=3)
    }
    assert after == {"w0", "w1", "w2"}, logs
    executed = [(e["schedule"], e["scheduled_for"]) for e in harness.executions(log)]
    ran = set(executed)
    assert {(r.schedule, r.scheduled_for.isoformat()) for r in rows if r.status is RunStatus.SUCCEEDED} == ran
    # No fire handed twice: each fire's job ran once, through the outage and the reconnects.
    assert len(executed) == len(ran), sorted(f for f in ran if executed.count(f) > 1)
    # Nothing lost: every second from each schedule's first fire to its last has its row (run,
    # failed to hand off with the broker's error, or skipped with the reason).
    for name in ("w0", "w1", "w2"):
        fires = sorted({r.scheduled_for for r in rows if r.schedule == name})
        span = int((fires[-1] - fires[0]).total_seconds())
        assert fires == [fires[0] + timedelta(seconds=s) for s in range(span + 1)], (name, fires)


#: Fires due at once in :func:`broken_batch`: about 1 kB each on the wire, so a batch of 100 (a
#: claim's) is about 100 kB.
BATCH_FIRES = 200
#: Where :func:`broken_batch` breaks the node's connection: past its start, within its first batch.
BREAK_AFTER_BYTES = 40_000


def through(proxy: TcpProxy, url: str) -> str:
    """``url`` with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{proxy.port}" if credentials else f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class BrokenBatch:
    """What :func:`broken_batch` saw: the fires' names, their rows, the workers' executions, the
    proxy's breaks and the logs of the node and the worker."""

    names: list[str]
    rows: list[harness.Run]
    executions: list[dict[str, Any]]
    breaks: int
    node_log: str
    worker_log: str


def broken_batch(
    tmp_path: Path,
    config_for: ConfigFor,
    broker_url: str,
    queue: Queue,
    node_broker: Callable[[str], tuple[dict[str, object], dict[str, str]]],
) -> BrokenBatch:
    """200 fires due at once on one node whose connection to the broker at ``broker_url`` goes
    through a proxy that breaks it once, 40 kB in; ``queue``'s workers connect directly.

    :param node_broker: the executor options and the environment (for an app module reading
        its broker from it) that point the node at the URL given
    """
    parts = urlsplit(broker_url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 0).start()
    store_config = config_for("postgres", migrated=True)
    options, node_env = node_broker(through(proxy, broker_url))
    table = {**queue.table, **options}
    log = tmp_path / "executions.jsonl"
    config = harness.write_config(tmp_path / "n1.toml", store_config.store, "n1", queue.executor, table)
    names = [f"b{i:03d}" for i in range(BATCH_FIRES)]
    with harness.admin(config) as admin:
        for i, name in enumerate(names):
            # Yearly: each fires once, when the test triggers it.
            admin.add(name, "0 0 1 1 *", queue.work, executor=queue.executor, args={"n": i})
        for name in names:
            admin.trigger(name)
    store = store_config.build_store()
    store.open()
    workers: list[subprocess.Popen[bytes]] = []
    node: subprocess.Popen[bytes] | None = None
    try:
        workers = queue.start_workers(harness.env_for(config, log, **queue.env), tmp_path)
        proxy.break_after(BREAK_AFTER_BYTES)
        env = harness.env_for(config, log, **{**queue.env, **node_env})
        node = harness.start_node(config, 90, env, tmp_path / "n1.log")
        harness.wait_until(lambda: len(harness.history(store)) >= BATCH_FIRES, 90, f"{BATCH_FIRES} runs")
        rows = harness.settled(store, timeout=90)
        ran = sum(r.status is RunStatus.SUCCEEDED for r in rows)
        harness.wait_until(lambda: len(harness.executions(log)) >= ran, 30, "the workers' record of each run")
        time.sleep(2.0)  # room for a wrong second execution to show up in the workers' record
    finally:
        if node is not None:
            harness.stop(node)
        for worker in workers:
            harness.stop(worker)
        proxy.close()
        store.close()
    worker_logs = [p for p in sorted(tmp_path.glob("*.log")) if p.name != "n1.log"]
    return BrokenBatch(
        names=names,
        rows=rows,
        executions=harness.executions(log),
        breaks=proxy.broken,
        node_log=(tmp_path / "n1.log").read_text(errors="replace"),
        worker_log="".join(p.read_text(errors="replace") for p in worker_logs),
    )


def every_fire_ran_once(seen: BrokenBatch) -> None:
    """The checks every executor's broken batch must pass: the break happened, every fire ran
    exactly once by the workers' record, and its row ended ``succeeded``."""
    logs = seen.node_log[-3000:] + "\n--- workers\n" + seen.worker_log[-3000:]
    assert seen.breaks == 1, logs
    assert sorted(r.schedule for r in seen.rows) == seen.names, seen.rows
    ended = collections.Counter((r.status.value, r.error) for r in seen.rows)
    assert {r.status for r in seen.rows} == {RunStatus.SUCCEEDED}, (ended.most_common(5), logs)
    per_fire = collections.Counter(e["schedule"] for e in seen.executions)
    missing = sorted(set(seen.names) - set(per_fire))
    assert not missing and set(per_fire.values()) == {1}, (missing[:5], per_fire.most_common(3), logs)
    assert len({e["message_id"] for e in seen.executions}) == len(seen.names)
