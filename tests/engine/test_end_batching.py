"""Run ends gathered over ``scheduler.end_batch_window`` and written together: on the real SQLite
store and the real local executor, with the node's monotonic clock stepped by hand."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import make_engine
from tests.support.stores import Ticker
from tickwork import schedules as admin
from tickwork.config import config_from
from tickwork.engine import Engine, EngineSettings
from tickwork.errors import ConfigError, StoreError
from tickwork.structures import Finish, RunStatus, ScheduleSpec
from tickwork.testing import FakeClock
from tickwork_local.executor import LocalExecutor
from tickwork_sqlite.store import SQLiteStore


class CountingStore(SQLiteStore):
    """The real SQLite store, counting its ``finish`` calls; ``fail_finishes`` of them raise first."""

    def __init__(self, path: str, clock: FakeClock) -> None:
        super().__init__(path, clock=clock)
        self.finish_calls: list[int] = []
        self.fail_finishes = 0

    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool]:
        if self.fail_finishes:
            self.fail_finishes -= 1
            raise StoreError("database unreachable (test)")
        self.finish_calls.append(len(finishes))
        return super().finish(node_id, finishes)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[CountingStore]:
    s = CountingStore(str(tmp_path / "tickwork.db"), clock)
    s.upgrade()
    s.open()
    yield s
    s.close()


@pytest.fixture
def ticker() -> Ticker:
    return Ticker()


@pytest.fixture
def make(store: CountingStore, clock: FakeClock, ticker: Ticker) -> Iterator[Callable[..., Engine]]:
    made: list[tuple[Engine, LocalExecutor]] = []

    def build(monotonic: Callable[[], float] = ticker, **settings: object) -> Engine:
        made.append(make_engine(store, clock, None, monotonic, **{"lookahead": 0.0, **settings}))
        return made[-1][0]

    yield build
    for engine, executor in made:
        executor.shutdown(wait=False)
        engine.membership.stop()


def add(store: CountingStore, name: str, expression: str = "* * * * *") -> None:
    spec = ScheduleSpec(
        name=name, trigger_kind="cron", expression=expression, target="tests.support.jobs_for_tests:record"
    )
    admin.add(store, spec)


def gather(engine: Engine, ends: int) -> None:
    """Tick (the node's clock standing still) until ``ends`` runs have ended and been gathered."""
    deadline = time.monotonic() + 10
    while engine.ends.backlog < ends:
        assert time.monotonic() < deadline, f"only {engine.ends.backlog} of {ends} runs ended"
        engine.tick()
        time.sleep(0.005)


def statuses(store: CountingStore) -> list[RunStatus]:
    return sorted((r.status for r in store.history()), key=lambda s: s.value)


def test_ends_within_the_window_are_written_together_when_it_closes(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock, ticker: Ticker
) -> None:
    for name in ("a", "b", "c"):
        add(store, name)
    clock.advance(60)  # all three due
    engine = make(end_batch_window=0.05)
    gather(engine, 3)
    # Ended, not yet written: the schedules are still claimed, the runs still running.
    assert store.finish_calls == []
    assert statuses(store) == [RunStatus.RUNNING] * 3
    assert 0 < (engine.ends.seconds_until_due() or 0) <= 0.05
    ticker.advance(0.049)
    engine.tick()
    assert store.finish_calls == []
    ticker.advance(0.001)
    engine.tick()
    assert store.finish_calls == [3]
    assert statuses(store) == [RunStatus.SUCCEEDED] * 3
    assert engine.ends.backlog == 0 and engine.ends.seconds_until_due() is None
    assert engine.counters.end_batches == 1 and engine.finished == 3


def test_without_a_window_each_pass_writes_its_ends(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock
) -> None:
    add(store, "a")
    clock.advance(60)
    engine = make(end_batch_window=0)
    deadline = time.monotonic() + 10
    while not store.finish_calls:
        assert time.monotonic() < deadline
        engine.tick()
        time.sleep(0.005)
    assert store.finish_calls == [1] and statuses(store) == [RunStatus.SUCCEEDED]


def test_ends_wait_for_company_only_while_a_run_is_in_flight_and_an_idle_node_writes_at_once(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock
) -> None:
    add(store, "quick")
    admin.add(
        store,
        ScheduleSpec(
            name="slow", trigger_kind="cron", expression="* * * * *", target="tests.support.jobs_for_tests:blocked"
        ),
    )
    clock.advance(60)
    engine = make(end_batch_window=0.5)
    jobs.gate.clear()
    try:
        deadline = time.monotonic() + 10
        # The node's clock stands still: the window never closes.
        while engine.ends.backlog < 1:
            assert time.monotonic() < deadline, "the quick run did not end"
            engine.run_once()
            time.sleep(0.005)
        for _ in range(5):
            engine.run_once()
        # "slow" is still in flight: its end may come within the window, so "quick" waits for it.
        assert store.finish_calls == [] and engine.ends.backlog == 1
        jobs.gate.set()
        while not store.finish_calls:
            assert time.monotonic() < deadline, "the ends were not written"
            # Changes notified all the time (the other nodes of a cluster at work) do not make
            # an idle node look busy.
            engine.wake()
            engine.run_once()
            time.sleep(0.005)
        # Nothing else in flight or due: written together at once, not when the window closes
        # (an end held back on an idle node is only a wider window for a kill to lose it).
        assert store.finish_calls == [2] and statuses(store) == [RunStatus.SUCCEEDED] * 2
    finally:
        jobs.gate.set()


def test_an_end_never_waits_past_the_time_its_next_fire_may_be_claimed(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock, ticker: Ticker
) -> None:
    add(store, "every-second", "* * * * * *")
    # A run still in flight keeps the node from being idle (an idle node writes an end at once),
    # whenever the node happens to read its next due time.
    admin.add(
        store,
        ScheduleSpec(
            name="slow", trigger_kind="cron", expression="* * * * * *", target="tests.support.jobs_for_tests:blocked"
        ),
    )
    clock.advance(1)
    # A node claiming 0.5 s ahead (lookahead 1) must see the release 0.5 s before the next
    # fire, however long the window: here 0.5 s after the run ended (the clocks stand still).
    engine = make(end_batch_window=0.9, lookahead=1.0)
    jobs.gate.clear()
    try:
        gather(engine, 1)
        assert engine.ends.seconds_until_due() == pytest.approx(0.5, abs=1e-6)
        ticker.advance(0.5)
        engine.tick()
        assert store.finish_calls == [1]
    finally:
        jobs.gate.set()


def test_a_full_batch_is_written_at_once(make: Callable[..., Engine], store: CountingStore, clock: FakeClock) -> None:
    for name in ("a", "b"):
        add(store, name)
    clock.advance(60)
    engine = make(end_batch_window=0.5, batch_size=2)
    deadline = time.monotonic() + 10
    while not store.finish_calls:
        assert time.monotonic() < deadline
        engine.tick()
        time.sleep(0.005)
    assert store.finish_calls == [2]


def test_gathered_ends_survive_a_failed_write_and_are_written_next(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock, ticker: Ticker
) -> None:
    for name in ("a", "b"):
        add(store, name)
    clock.advance(60)
    engine = make(end_batch_window=0.01)
    gather(engine, 2)
    ticker.advance(0.01)
    store.fail_finishes = 1
    assert engine.run_once() > 0  # backs off, does not raise
    assert engine.ends.backlog == 2 and statuses(store) == [RunStatus.RUNNING] * 2
    # Still this node's claims: the reconcile must not release them.
    assert {c.spec.name for c in engine.tracked_claims()} == {"a", "b"}
    assert engine.ends.seconds_until_due() == 0
    engine.tick()
    assert store.finish_calls == [2] and statuses(store) == [RunStatus.SUCCEEDED] * 2


def test_a_stopping_node_writes_gathered_ends_whatever_the_window(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock
) -> None:
    add(store, "a")
    clock.advance(60)
    engine = make(end_batch_window=1.0)
    gather(engine, 1)
    engine.shutdown(timeout=1)
    assert store.finish_calls == [1] and statuses(store) == [RunStatus.SUCCEEDED]


def test_the_loop_sleeps_no_longer_than_the_window(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock
) -> None:
    add(store, "a")
    clock.advance(60)
    engine = make(end_batch_window=0.2, max_sleep=60.0)
    gather(engine, 1)
    assert 0 < engine.sleep_seconds() == pytest.approx(0.2)


def test_a_batched_end_records_the_time_the_run_ended_not_the_time_it_was_written(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock, ticker: Ticker
) -> None:
    add(store, "a")
    clock.advance(60)
    engine = make(end_batch_window=0.5)
    gather(engine, 1)  # both clocks stand still while the run starts and ends
    ended_at = clock()
    ticker.advance(0.5)
    clock.advance(0.5)
    engine.tick()
    assert store.finish_calls == [1]
    (run,) = store.history()
    assert run.status is RunStatus.SUCCEEDED and run.finished_at == ended_at == run.started_at


def test_an_outcome_wakes_a_loop_that_would_sleep_past_the_window(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock
) -> None:
    add(store, "a")
    clock.advance(60)
    engine = make(monotonic=time.monotonic, end_batch_window=0.05, max_sleep=30.0)
    loop = threading.Thread(target=engine.run_forever, daemon=True)
    loop.start()
    try:
        deadline = time.monotonic() + 10  # the loop would otherwise sleep 30 s after its claim
        while not store.finish_calls:
            assert time.monotonic() < deadline, "the run's end was not written"
            time.sleep(0.01)
    finally:
        engine.stop()
        loop.join(5)
    assert statuses(store) == [RunStatus.SUCCEEDED]


def test_an_outcome_that_arrived_during_a_pass_shortens_the_sleep_to_the_window(
    make: Callable[..., Engine], store: CountingStore, clock: FakeClock
) -> None:
    add(store, "a")
    clock.advance(60)
    engine = make(monotonic=time.monotonic, end_batch_window=0.05, max_sleep=30.0)
    engine.runs.outcomes.loop_awake()
    engine.tick()  # starts the run; it ends on an executor thread, waking nothing
    deadline = time.monotonic() + 10
    while engine.runs.outcomes.loop_asleep(30.0) == 30.0:
        assert time.monotonic() < deadline, "the ended run never shortened the sleep"
        engine.runs.outcomes.loop_awake()
        time.sleep(0.01)
    engine.runs.outcomes.loop_awake()
    assert engine.runs.outcomes.loop_asleep(30.0) == 0.05
    engine.tick()
    assert engine.ends.backlog == 1


@pytest.mark.parametrize("key", ["end_batch_window", "start_batch_window"])
@pytest.mark.parametrize("window", [-0.01, 1.5, float("nan"), "0.1", True])
def test_a_window_out_of_range_is_refused_by_name(key: str, window: object) -> None:
    with pytest.raises(ConfigError, match=key):
        EngineSettings(node_id="n1", **{key: window})  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["end_batch_window", "start_batch_window"])
def test_the_window_is_read_from_the_config(key: str) -> None:
    assert getattr(config_from({"scheduler": {key: 0.005}}, {}).scheduler, key) == 0.005
    with pytest.raises(ConfigError, match=key):
        config_from({"scheduler": {key: 2}}, {})


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), "0.25", True])
def test_steal_after_out_of_range_is_refused_by_name(value: object) -> None:
    with pytest.raises(ConfigError, match="steal_after"):
        EngineSettings(node_id="n1", steal_after=value)  # type: ignore[arg-type]


def test_a_node_built_from_the_config_uses_both_windows(tmp_path: Path) -> None:
    from tickwork.node import Node

    config = config_from(
        {
            "scheduler": {"end_batch_window": 0.2, "start_batch_window": 0.03, "steal_after": 1.5},
            "store": {"plugin": "sqlite", "path": str(tmp_path / "t.db")},
        },
        {},
    )
    node = Node(config)
    try:
        node.open()
        assert node.engine.settings.end_batch_window == 0.2 and node.engine.ends.window == 0.2
        assert node.engine.settings.start_batch_window == 0.03
        assert node.engine.settings.steal_after == 1.5 and node.engine.gate.steal_after == 1.5
    finally:
        node.shutdown()
