"""A start window's round trip (docs/claim-protocol.md#start-windows): the start statement goes
out once the earliest held fire is within its margin and starts every fire within the lead; the
ends gathered meanwhile and the takeover ride on it. On the real SQLite store with the node's
monotonic clock stepped by hand."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import make_engine
from tests.support.stores import Ticker
from tickwork import schedules as admin
from tickwork.engine import Engine
from tickwork.engine.failover import Takeovers
from tickwork.structures import Claim, Finish, RunStatus, ScheduleSpec, StartRound
from tickwork.testing import FakeClock
from tickwork_sqlite.store import SQLiteStore


class CountingStore(SQLiteStore):
    """The real SQLite store, recording its start rounds and the ends written outside them."""

    def __init__(self, path: str, clock: FakeClock) -> None:
        super().__init__(path, clock=clock)
        self.rounds: list[tuple[list[str], int, bool]] = []
        self.own_finishes = 0
        self.own_takeovers = 0
        self._in_round = False

    def start_round(
        self,
        node_id: str,
        claims: Sequence[Claim],
        grace: float,
        lead: float = 0.0,
        *,
        take_over: bool = False,
        finishes: Sequence[Finish] = (),
    ) -> StartRound:
        self.rounds.append(([c.spec.name for c in claims], len(finishes), take_over))
        self._in_round = True
        try:
            return super().start_round(node_id, claims, grace, lead, take_over=take_over, finishes=finishes)
        finally:
            self._in_round = False

    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool | None]:
        self.own_finishes += not self._in_round
        return super().finish(node_id, finishes)

    def take_over_unstarted(self, grace: float) -> int:
        self.own_takeovers += not self._in_round
        return super().take_over_unstarted(grace)


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
def engine(store: CountingStore, clock: FakeClock, ticker: Ticker) -> Iterator[Engine]:
    built, executor = make_engine(store, clock, None, ticker, lookahead=5.0, start_lead=0.05, end_batch_window=1.0)
    yield built
    executor.shutdown(wait=False)
    built.membership.stop()


def add_every_10s(store: CountingStore, name: str, first: datetime) -> None:
    """Add ``name``, firing every 10 s from ``first``."""
    target = "tests.support.jobs_for_tests:record"
    expression = f"10s@{first.isoformat()}"
    admin.add(store, ScheduleSpec(name=name, trigger_kind="interval", expression=expression, target=target))


def test_one_start_statement_starts_the_fires_within_the_lead_and_carries_the_ends(
    engine: Engine, store: CountingStore, clock: FakeClock, ticker: Ticker
) -> None:
    def advance(seconds: float) -> None:
        clock.advance(seconds)
        ticker.advance(seconds)

    jobs.calls.clear()
    first = clock() + timedelta(seconds=10)
    add_every_10s(store, "first", first)
    add_every_10s(store, "second", first + timedelta(seconds=0.02))
    add_every_10s(store, "third", first + timedelta(seconds=0.5))
    advance(9.52)
    engine.tick()  # all three claimed ahead
    assert len(engine.held) == 3 and store.rounds == []
    # 40 ms before the first fire: within the lead, not yet within the start margin.
    advance(0.44)
    engine.tick()
    assert store.rounds == []
    # Within the margin: one statement starts both fires due within the lead (20 ms apart).
    advance(0.037)
    engine.tick()
    assert [names for names, _, _ in store.rounds] == [["first", "second"]]
    advance(0.03)  # both due: they run
    deadline = time.monotonic() + 10
    while engine.ends.backlog < 2:
        assert time.monotonic() < deadline, "the two runs did not end"
        engine.tick()
        time.sleep(0.005)
    # Their ends wait for company (end_batch_window), and ride on the third fire's start.
    assert store.own_finishes == 0
    advance(0.497)
    engine.tick()
    assert [(names, ends) for names, ends, _ in store.rounds] == [(["first", "second"], 0), (["third"], 2)]
    assert store.own_finishes == 0 and engine.ends.backlog == 0
    statuses = {r.schedule: r.status for r in store.history() if r.status is not RunStatus.RUNNING}
    assert statuses == {"first": RunStatus.SUCCEEDED, "second": RunStatus.SUCCEEDED}


def test_the_takeover_rides_on_start_statements_and_runs_alone_after_an_interval_without_one() -> None:
    ticker = Ticker()
    takeovers = Takeovers(0.2, ticker)
    assert takeovers.turn()  # never ran
    takeovers.done()
    ticker.advance(0.05)
    assert not takeovers.wanted() and not takeovers.turn()
    ticker.advance(0.051)  # half an interval: a start statement going out now carries it
    assert takeovers.wanted() and not takeovers.turn()
    takeovers.done()
    assert takeovers.seconds_until_turn() == pytest.approx(0.2)
    ticker.advance(0.19)
    assert takeovers.wanted() and not takeovers.turn()
    ticker.advance(0.011)  # a full interval without a start statement: on its own
    assert takeovers.turn() and takeovers.seconds_until_turn() == 0.0


def test_a_busy_node_sends_no_takeover_of_its_own(
    engine: Engine, store: CountingStore, clock: FakeClock, ticker: Ticker
) -> None:
    # Fires 50 ms apart: a start statement goes out about every 50 ms, and carries the takeover
    # every half interval (0.1 s), so the housekeeping's own turn never comes.
    names = [f"s{i}" for i in range(12)]
    first = clock() + timedelta(seconds=10)
    for i, name in enumerate(names):
        add_every_10s(store, name, first + timedelta(seconds=0.05 * i))
    clock.advance(9.5)
    ticker.advance(9.5)
    engine.tick()
    assert len(engine.held) == len(names)
    # Until the first start statement, the takeover runs on its own.
    for _ in range(90):  # to 9.95 s, the node's monotonic clock stepped with the database's
        clock.advance(0.005)
        ticker.advance(0.005)
        engine.tick()
    assert store.rounds == []
    store.own_takeovers = 0
    for _ in range(120):  # 10.55 s: the fires' start statements
        clock.advance(0.005)
        ticker.advance(0.005)
        engine.tick()
    assert {n for names_, _, _ in store.rounds for n in names_} == set(names)
    assert any(take_over for _, _, take_over in store.rounds)
    assert store.own_takeovers == 0
