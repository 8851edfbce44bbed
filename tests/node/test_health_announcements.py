"""The health sweep's announcements with real nodes on SQLite, PostgreSQL and MySQL, as an on-call
team relies on them: a schedule that failed 30 times in a row before any node swept is announced
once, with its real count, by two nodes that both sweep one database; a restarted node announces
nothing again; the recovery is announced as resolved; a long failure is announced again every
``[health] repeat_interval`` (once per cluster), and a schedule paused or disabled on purpose is
only recorded."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.health_watch import Blind, Listener
from tests.support.servers.configs import BACKENDS, ConfigFor, StoreConfig
from tickwork.admin.api import Admin, connect
from tickwork.config import parse
from tickwork.node import Node
from tickwork.plugin.manager import PluginManager
from tickwork.structures import AlertKind, Health

WAIT_S = 90  # guard against a hung node; not a timing assertion
INTERVAL = 0.2  # [health] watch_interval of the sweeping nodes
ATTEMPTS = 30  # failed runs of one fire: more than the 20 recent runs health reads


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.1)


class Cluster:
    """Nodes on one database: workers that run fires, and sweepers that see no other node (each
    believes it sweeps: two of them are the split view the announcements must survive)."""

    def __init__(self, store: StoreConfig, tmp: Path) -> None:
        self.store = store
        self.tmp = tmp
        self.admin: Admin = connect(parse(store.as_dict()))
        self.nodes: list[Node] = []

    def config(self, node_id: str, **health: Any) -> dict[str, Any]:
        return store_config(self.store, node_id, health)

    def worker(self, node_id: str) -> Node:
        node = Node(parse(self.config(node_id)))
        return self._started(node)

    def sweeper(self, node_id: str, listener: Listener, **health: Any) -> Node:
        table = self.config(node_id, **health)
        table["membership"] = {"plugin": "blind", "heartbeat_interval": 0.2}
        manager = PluginManager(extra=[listener, Blind()])
        node = Node(parse(table, tables=manager.config_tables), manager=manager)
        return self._started(node)

    def _started(self, node: Node) -> Node:
        node.start()
        self.nodes.append(node)
        return node

    def stop(self, node: Node) -> None:
        node.stop()
        self.nodes.remove(node)

    def close(self) -> None:
        for node in list(self.nodes):
            self.stop(node)
        self.admin.close()


def store_config(store: StoreConfig, node_id: str, health: dict[str, Any]) -> dict[str, Any]:
    return store.as_dict(
        scheduler={"node_id": node_id, "lookahead": 0},
        health={"watch_interval": INTERVAL, **health},
    )


@pytest.fixture(params=BACKENDS)
def cluster(request: pytest.FixtureRequest, config_for: ConfigFor, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(config_for(request.param, migrated=True), tmp_path)
    try:
        yield c
    finally:
        c.close()


def fail_thirty_times(cluster: Cluster, name: str, flag: Path) -> None:
    """One fire of ``name`` failing ``ATTEMPTS`` times in a row (its retries), run by a worker
    that does not sweep; the worker is stopped again."""
    flag.write_text("")
    worker = cluster.worker("worker")
    cluster.admin.trigger(name)
    wait_for(
        f"{ATTEMPTS} failed attempts",
        lambda: len(cluster.admin.history(schedule=name, status="failed", limit=100)) == ATTEMPTS,
    )
    cluster.stop(worker)


def test_a_failure_older_than_the_sweep_is_announced_once_with_its_real_count(cluster: Cluster) -> None:
    admin = cluster.admin
    flag = cluster.tmp / "broken"
    job = "tests.support.health_jobs:fails_while"
    admin.add("billing", "1h", job, args={"flag": str(flag)}, retries=ATTEMPTS - 1, retry_backoff=0)
    admin.add("steady", "1h", "tests.support.health_jobs:fine")
    admin.add("resting", "1h", "tests.support.health_jobs:fine")
    admin.pause("resting", "waiting for the new bucket", by="ana")
    admin.add("retired", "1h", "tests.support.health_jobs:fine", enabled=False)
    fail_thirty_times(cluster, "billing", flag)
    health = admin.get("billing").health
    assert health is not None
    assert (health.state, health.consecutive_failures) == (Health.FAILING, ATTEMPTS)
    assert health.reason.startswith(f"{ATTEMPTS} failures in a row, never succeeded")

    # Two nodes that both believe they sweep: the failure is announced once, by one of them.
    listener = Listener()
    a = cluster.sweeper("sweeper-a", listener)
    b = cluster.sweeper("sweeper-b", listener)
    wait_for("the announcement", lambda: listener.of("billing") != [])
    time.sleep(10 * INTERVAL)  # both keep sweeping: nothing more is said
    [announced] = listener.of("billing")
    assert (announced.kind, announced.old, announced.new.state) == (AlertKind.FIRING, Health.HEALTHY, Health.FAILING)
    assert announced.new.consecutive_failures == ATTEMPTS
    assert listener.schedules() == {"billing"}  # healthy, paused and disabled ones: recorded only

    # Restarted, the sweepers announce nothing again; the recovery is announced, once.
    cluster.stop(a)
    cluster.stop(b)
    again = Listener()
    cluster.sweeper("sweeper-a", again)
    cluster.sweeper("sweeper-b", again)
    flag.unlink()
    worker = cluster.worker("worker")
    admin.trigger("billing")
    wait_for("the recovery", lambda: again.of("billing") != [])
    time.sleep(10 * INTERVAL)
    cluster.stop(worker)
    assert again.kinds("billing") == ["resolved:failing->healthy"]
    assert again.schedules() == {"billing"}


def test_a_long_failure_is_announced_again_every_repeat_interval_once_per_cluster(cluster: Cluster) -> None:
    admin = cluster.admin
    flag = cluster.tmp / "broken"
    job = "tests.support.health_jobs:fails_while"
    admin.add("billing", "1h", job, args={"flag": str(flag)}, retries=ATTEMPTS - 1, retry_backoff=0)
    fail_thirty_times(cluster, "billing", flag)
    repeat = 1.0
    listener = Listener()
    cluster.sweeper("sweeper-a", listener, repeat_interval=repeat)
    cluster.sweeper("sweeper-b", listener, repeat_interval=repeat)
    wait_for("two repeats", lambda: len(listener.of("billing")) >= 3)
    heard = listener.of("billing")[:3]
    assert [c.kind for c in heard] == [AlertKind.FIRING, AlertKind.REPEAT, AlertKind.REPEAT]
    first = heard[0]
    assert all(c.since == first.at for c in heard)
    assert all(c.new.state is Health.FAILING and c.old is Health.FAILING for c in heard[1:])
    # Once per cluster: by the database clock, each announcement is a whole interval after the
    # one before, though two nodes sweep every 0.2 s.
    gaps = [(later.at - earlier.at).total_seconds() for earlier, later in itertools.pairwise(heard)]
    assert min(gaps) >= repeat


def test_a_pause_of_a_schedule_seen_before_is_a_change_but_not_an_alert(cluster: Cluster) -> None:
    admin = cluster.admin
    admin.add("steady", "1h", "tests.support.health_jobs:fine")
    store = admin.store()
    sid = store.get("steady").id
    listener = Listener()
    cluster.sweeper("sweeper-a", listener)
    # Recorded healthy first (no announcement), then paused.
    wait_for("the healthy state recorded", lambda: sid in store.announcements([sid]))
    assert store.announcements([sid])[sid].state == "healthy"
    assert listener.of("steady") == []
    admin.pause("steady", "maintenance", by="ana")
    wait_for("the change", lambda: listener.of("steady") != [])
    [change] = listener.of("steady")
    assert (change.kind, change.new.state, change.new.alerting) == (AlertKind.CHANGED, Health.PAUSED, False)
    assert change.new.pause is not None and change.new.pause.note == "maintenance"
    assert "paused by ana at " in change.new.reason
    assert ": maintenance; " in change.new.reason
