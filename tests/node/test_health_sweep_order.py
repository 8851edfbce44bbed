"""Two sweepers of one store, one of them reading while the other announces: a sweep reads what
was announced before what it assesses the health from, so it never announces a change back from
runs older than the announcement it read (CI once heard a recovery, then "failing" again)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from tests.support.benchmarks import run_benchmark
from tickwork.abc import Store
from tickwork.config import Config, parse
from tickwork.node import Node
from tickwork.node.healthwatch import HealthWatch
from tickwork.structures import Announcement, Finish, HealthChange, Outcome, RunStatus, ScheduleSpec
from tickwork.testing import MemoryStore


class SweepingNode:
    """What a :class:`HealthWatch` uses of its node: an id, a store, a configuration, and a
    membership in which it is the only live node (so it sweeps)."""

    def __init__(self, node_id: str, store: Store, config: Config) -> None:
        self.node_id, self.store, self.config = node_id, store, config

    def members(self) -> list[str]:
        return [self.node_id]


class AnnouncedMeanwhile:
    """A store whose first read of the announcements lets ``meanwhile`` run just before it: what
    another sweeper does between this sweeper's reads."""

    def __init__(self, store: Store, meanwhile: Callable[[], None]) -> None:
        self._store = store
        self._meanwhile: Callable[[], None] | None = meanwhile

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def all_announcements(self) -> dict[int, Announcement]:
        if self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            meanwhile()
        return self._store.all_announcements()


def run_once(store: Store, status: RunStatus) -> None:
    (claim,) = store.claim_due("worker", limit=10, buckets=None)
    store.finish("worker", [Finish(claim, Outcome(status), store.now())])  # due again at once


def kinds(changes: Sequence[HealthChange]) -> list[str]:
    return [f"{c.kind.value}:{c.old.value}->{c.new.state.value}" for c in changes]


def test_a_sweep_does_not_announce_failing_again_from_runs_read_before_the_recovery() -> None:
    config = parse({"health": {"watch_interval": 1}})
    store = MemoryStore()
    store.upgrade()
    store.open()
    store.add(ScheduleSpec(name="billing", trigger_kind="cron", expression="* * * * *", target="m:f"), store.now())
    run_once(store, RunStatus.FAILED)
    a = HealthWatch(cast(Node, SweepingNode("a", store, config)), lambda changes: None)
    assert kinds(a.sweep()) == ["firing:healthy->failing"]

    heard_by_a: list[HealthChange] = []

    def recovered_and_announced_by_a() -> None:
        run_once(store, RunStatus.SUCCEEDED)
        heard_by_a.extend(a.sweep())

    raced = AnnouncedMeanwhile(store, recovered_and_announced_by_a)
    b = HealthWatch(cast(Node, SweepingNode("b", cast(Store, raced), config)), lambda changes: None)
    assert kinds(b.sweep()) == []
    assert kinds(heard_by_a) == ["resolved:failing->healthy"]
    # Both agree afterwards: nothing more to say.
    assert kinds(a.sweep()) == [] and kinds(b.sweep()) == []
    store.close()


def test_the_sweep_benchmark_runs_a_steady_sweep() -> None:
    """benchmarks/health_sweep.py at a tiny size (the lead times it at 20,000): it works, and its
    timed sweeps announce nothing (it refuses to time a sweep that did)."""
    done = run_benchmark("health_sweep.py", "--schedules", "50", "--repeat", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("health sweep of 50 schedules on sqlite, 2 sweeps: CPU median ")
