"""An engine on a fake clock over a real store, stepped by hand: its making (``make_engine``, the
``new_engine`` fixture), schedules of tests/support/jobs_for_tests.py (``add``), passes (``step``)
and what they ran (``runs``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.support import jobs_for_tests as jobs
from tickwork import schedules as admin
from tickwork.abc import Membership, Store
from tickwork.engine import Engine, EngineSettings
from tickwork.engine.listener import EngineListener
from tickwork.sql.store import SQLStore
from tickwork.structures import RunRecord, ScheduleSpec
from tickwork.testing import FakeClock
from tickwork_local.executor import LocalExecutor
from tickwork_membership.single import SingleMembership


def make_engine(
    store: SQLStore,
    clock: FakeClock | None,
    membership: SingleMembership | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    executor: LocalExecutor | None = None,
    **settings: object,
) -> tuple[Engine, LocalExecutor]:
    executor = executor or LocalExecutor(max_workers=4)
    executor.start()
    membership = membership or SingleMembership()
    membership.start(store, "n1")
    manager = settings.pop("manager", None)
    values: dict[str, object] = {"node_id": "n1", "reap_interval": 3600.0}
    values.update(settings)
    engine = Engine(
        store,
        {"local": executor},
        membership,
        EngineSettings(**values),  # type: ignore[arg-type]
        clock=clock,
        monotonic=monotonic,
        manager=manager,  # type: ignore[arg-type]
    )
    return engine, executor


@pytest.fixture
def new_engine(clock: FakeClock) -> Iterator[Callable[..., Engine]]:
    """Make engines on the fake clock (``new_engine(store, **settings)``), stopped after the test."""
    made: list[tuple[Engine, LocalExecutor]] = []

    def make(
        store: SQLStore,
        membership: SingleMembership | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        **settings: object,
    ) -> Engine:
        made.append(make_engine(store, clock, membership, monotonic, **settings))
        return made[-1][0]

    yield make
    for eng, executor in made:
        executor.shutdown(wait=False)
        eng.membership.stop()


def add(store: SQLStore, function: str, expression: str = "* * * * *", **kw: object) -> None:
    """Add a schedule named after a function of tests/support/jobs_for_tests.py."""
    values: dict[str, object] = {
        "name": function,
        "trigger_kind": "cron",
        "expression": expression,
        "target": f"tests.support.jobs_for_tests:{function}",
    }
    values.update(kw)
    admin.add(store, ScheduleSpec(**values))  # type: ignore[arg-type]


class ClaimCounts(EngineListener):
    """The sizes of an engine's claims that took anything, in order."""

    def __init__(self) -> None:
        self.counts: list[int] = []

    def claimed(self, count: int, seconds: float) -> None:
        if count:
            self.counts.append(count)


def step(engine: Engine) -> None:
    """One tick, then wait for what it started to end and be recorded."""
    while engine.tick():
        pass
    engine.drain(5)


def step_until_attempts(engine: Engine, attempts: int) -> None:
    """Step until the job has been attempted ``attempts`` times (retries wait a real backoff)."""
    deadline = time.monotonic() + 5
    while len(jobs.attempts) < attempts and time.monotonic() < deadline:
        step(engine)
        time.sleep(0.02)
    step(engine)


def runs(store: SQLStore) -> list[RunRecord]:
    return sorted(store.history(limit=1000), key=lambda r: (r.scheduled_for, r.id))


class SwitchableMembership(SingleMembership):
    """A single-node membership whose health the test decides (a node cut off from the store)."""

    ok = True

    def healthy(self) -> bool:
        return self.ok and super().healthy()


class DeclaredDead(Membership):
    """A membership that can be told the node was declared dead (its rejoin count moves) or is
    unsure of itself (its heartbeat stale), as the heartbeat membership finds after a freeze.
    ``unsure_asked`` is set once it was asked twice while unsure: a worker is waiting on it."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.is_healthy = True
        self.unsure_asked = threading.Event()
        self._asked_unsure = 0

    def start(self, store: Store, node_id: str) -> None:
        pass

    def stop(self) -> None:
        pass

    def owned_buckets(self) -> None:
        return None

    def healthy(self) -> bool:
        if not self.is_healthy:
            self._asked_unsure += 1
            if self._asked_unsure >= 2:
                self.unsure_asked.set()
        return self.is_healthy

    def rejoins(self) -> int:
        return self.count
