"""What the dashboard added to the admin API, on real SQLite and PostgreSQL stores with runs made
by real nodes: the ``failing`` filter, ``next_fires``, ``in_flight`` and ``owned_buckets``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import tickwork
from tests.support import jobs_for_tests
from tests.support.nodes import run_due
from tests.support.servers.configs import ConfigFor
from tickwork.config import parse
from tickwork.node import Node
from tickwork.scheduling.triggers import get_trigger
from tickwork.structures import BUCKETS
from tickwork_sqlite.store import SQLiteStore

RECORD = "tests.support.jobs_for_tests:record"
BOOM = "tests.support.jobs_for_tests:boom"
BLOCKED = "tests.support.jobs_for_tests:blocked"


@pytest.fixture(params=["sqlite", "postgres"])
def config(request: pytest.FixtureRequest, config_for: ConfigFor) -> dict[str, Any]:
    return config_for(request.param, migrated=True).as_dict(scheduler={"node_id": "additions-node"})


@pytest.fixture
def admin(config: dict[str, Any]) -> Iterator[tickwork.Admin]:
    with tickwork.connect(config) as a:
        yield a


def test_failing_means_the_last_run_failed(admin: tickwork.Admin, config: dict[str, Any]) -> None:
    admin.add("flaky", "0 3 * * *", BOOM)
    admin.add("fine", "0 4 * * *", RECORD)
    admin.add("new", "0 5 * * *", RECORD)
    admin.trigger("flaky")
    admin.trigger("fine")
    run_due(config)
    assert [i.name for i in admin.list(failing=True)] == ["flaky"]
    assert sorted(i.name for i in admin.list(failing=False)) == ["fine", "new"]
    assert admin.count(failing=True) == 1 and admin.count(failing=False) == 2
    assert admin.count(failing=True, search="fine") == 0
    # Fixed: the next run succeeds, so it is not failing any more.
    admin.update("flaky", target=RECORD)
    admin.trigger("flaky")
    run_due(config)
    assert admin.list(failing=True) == []


def test_next_fires(admin: tickwork.Admin) -> None:
    info = admin.add("nightly", "0 2 * * *", RECORD, tz="Europe/Oslo")
    fires = admin.next_fires("nightly")
    trigger = get_trigger("cron", "0 2 * * *", "Europe/Oslo")
    assert len(fires) == 10 and fires[0] == info.next_fire
    assert all(trigger.next_after(a) == b for a, b in pairwise(fires))
    assert all(f.utcoffset() == timedelta(0) for f in fires)
    # "Run now" moves the stored next fire: it comes first, then the trigger's times again.
    due = admin.trigger("nightly").next_fire
    assert admin.next_fires("nightly", 3) == [due, fires[0], fires[1]]
    # Disabled: what it would fire once enabled, from now by the database clock.
    admin.disable("nightly")
    assert admin.next_fires("nightly", 2) == fires[:2]
    assert admin.next_fires("nightly", 0) == []
    with pytest.raises(tickwork.ScheduleNotFoundError):
        admin.next_fires("nope")
    with pytest.raises(ValueError, match="n: must be >= 0"):
        admin.next_fires("nightly", -1)


def test_in_flight_counts_what_each_node_holds(admin: tickwork.Admin, config: dict[str, Any]) -> None:
    admin.add("slow", "0 3 * * *", BLOCKED)
    admin.add("other", "0 4 * * *", RECORD)
    assert admin.in_flight() == {}
    admin.trigger("slow")
    jobs_for_tests.gate.clear()
    node = Node(parse(config))
    node.open()  # stepped by hand below: no loop thread
    try:
        node.engine.tick()
        assert admin.in_flight() == {"additions-node": 1}
        assert admin.get("slow").running_on == "additions-node"
    finally:
        jobs_for_tests.gate.set()
        node.shutdown()
    assert admin.in_flight() == {}


def test_owned_buckets_follow_the_membership(tmp_path: Path) -> None:
    path = str(tmp_path / "ring.db")
    SQLiteStore(path).upgrade()
    nodes = []
    try:
        for name in ("ring-a", "ring-b", "ring-c"):
            config = {
                "scheduler": {"node_id": name},
                "store": {"path": path},
                "membership": {"plugin": "hashring", "owners": 2},
            }
            node = Node(parse(config))
            node.start()
            nodes.append(node)
        with tickwork.connect(config) as admin:
            owned = admin.owned_buckets()
            assert sorted(owned) == ["ring-a", "ring-b", "ring-c"]
            counts = [c for c in owned.values() if c is not None]
            assert len(counts) == 3 and sum(counts) == 2 * BUCKETS  # every bucket has two owners
        single = {"scheduler": {"node_id": "solo"}, "store": {"path": path}}
        with tickwork.connect(single) as admin:  # a membership that does not partition: all of them
            assert set(admin.owned_buckets().values()) == {None}
    finally:
        stoppers = [threading.Thread(target=n.shutdown) for n in nodes]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
