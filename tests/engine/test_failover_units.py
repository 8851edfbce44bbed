"""The parts of failover one process can show: a node told it was declared dead drops what the
others released and rejoins; ends whose rows another session holds locked are written later, not
waited for; a stalled loop is named, makes the node unhealthy and stops its heartbeat.
On the in-memory reference store and the real SQLite store, with clocks stepped by hand."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

import pytest

from tests.support.engines import add, make_engine, runs
from tests.support.stores import Ticker
from tickwork.engine.watch import PassWatch
from tickwork.errors import StoreError
from tickwork.structures import Finish, RunStatus
from tickwork.testing import FakeClock, MemoryStore
from tickwork_membership.single import SingleMembership
from tickwork_sqlite.store import SQLiteStore

#: Heartbeats only when a test calls beat(): the heartbeat thread waits an hour.
QUIET = {"heartbeat_interval": 3600.0, "node_ttl": 10_000.0}


@pytest.fixture
def memory(clock: FakeClock) -> Iterator[MemoryStore]:
    store = MemoryStore(clock=clock)
    store.open()
    yield store
    store.close()


def test_a_node_declared_dead_drops_its_held_fires_and_rejoins(
    memory: MemoryStore, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    membership = SingleMembership(**QUIET)
    engine, executor = make_engine(memory, clock, membership, lookahead=1.0)  # type: ignore[arg-type]
    try:
        add(memory, "record")  # type: ignore[arg-type]
        clock.advance(59.6)
        engine.tick()
        assert len(engine.held) == 1
        # Frozen past node_ttl: another node declares it dead and releases its claims.
        clock.advance(10_001)
        assert memory.release_dead_node("n1", 10_000.0, "node n1 is dead") is not None
        assert memory.nodes() == []
        with caplog.at_level(logging.WARNING):
            membership.beat()
            assert membership.rejoins() == 1
            assert [n.id for n in memory.nodes()] == ["n1"]  # registered afresh
            assert membership.healthy()
            engine.tick()
        assert engine.held == []
        assert "was declared dead by the other nodes" in caplog.text
        assert "dropped 1 fire(s) claimed ahead" in caplog.text
        # The fire it held was given back, not abandoned: it is run (here: recorded skipped,
        # hours late) by whoever claims it next, never by the old claim.
        assert [r.status for r in memory.history(schedule="record")] != [RunStatus.ABANDONED]
        membership.beat()
        assert membership.rejoins() == 1  # an ordinary beat
    finally:
        executor.shutdown(wait=False)
        membership.stop()


def test_a_fire_whose_start_was_recorded_ahead_is_not_run_by_a_node_declared_dead_meanwhile(
    memory: MemoryStore, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.support import jobs_for_tests as jobs

    jobs.calls.clear()
    membership = SingleMembership(**QUIET)
    engine, executor = make_engine(memory, clock, membership, lookahead=1.0, start_lead=0.05)  # type: ignore[arg-type]
    try:
        add(memory, "record")  # type: ignore[arg-type]
        clock.advance(59.6)
        engine.tick()  # claimed ahead
        # 3 ms before its time: within the start margin (at least 5 ms), so the start statement
        # goes out and records it ahead (FencedStarts.margin).
        clock.advance(0.397)
        engine.tick()
        schedule = memory.get("record")
        assert schedule.claimed_at == schedule.next_fire  # its start is recorded, as of its time
        assert len(engine.held) == 1 and jobs.calls == []
        # Frozen past node_ttl before its time came: the others declare it dead, and record
        # the run abandoned.
        clock.advance(10_001)
        assert memory.release_dead_node("n1", 10_000.0, "node n1 is dead") is not None
        with caplog.at_level(logging.WARNING):
            membership.beat()
            engine.tick()
        engine.drain(1)
        assert jobs.calls == [] and engine.held == []
        assert "dropped 1 fire(s) claimed ahead" in caplog.text
        assert [r.status for r in memory.history(schedule="record")] == [RunStatus.ABANDONED]
    finally:
        executor.shutdown(wait=False)
        membership.stop()


class LockedRowsStore(SQLiteStore):
    """The real SQLite store, whose ``finish`` reports the first ``locked`` ends as passed over
    (their rows held by another session), as a server store does."""

    def __init__(self, path: str, clock: FakeClock) -> None:
        super().__init__(path, clock=clock)
        self.locked = 0
        self.calls: list[int] = []

    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool | None]:
        self.calls.append(len(finishes))
        if self.locked:
            self.locked -= 1
            return [None] * len(finishes)
        return super().finish(node_id, finishes)


def test_ends_whose_rows_are_locked_elsewhere_are_written_later_without_stalling(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = LockedRowsStore(str(tmp_path / "tickwork.db"), clock)
    store.upgrade()
    store.open()
    ticker = Ticker()
    engine, executor = make_engine(store, clock, None, ticker, lookahead=0.0, end_batch_window=0.0)
    try:
        add(store, "record")
        clock.advance(60)
        store.locked = 5
        with caplog.at_level(logging.WARNING):
            engine.tick()
            engine.drain(5)  # the run ends; its end is passed over, kept, not raised
            # Passed over once is what contention between nodes looks like: not a warning.
            assert "cannot write the end" not in caplog.text
            assert engine.ends.backlog == 1 and len(engine.tracked_claims()) == 1
            assert engine.run_once() >= 0.0  # the pass goes on
            for _ in range(4):  # passed over again each time, for 2.4 s in all: now it is said
                ticker.advance(0.6)
                engine.tick()
        assert "cannot write the end of 1 run(s) (record): their schedules' rows have stayed locked" in caplog.text
        assert engine.ends.backlog == 1
        ticker.advance(1.0)  # the kept end is due again
        engine.tick()
        assert engine.ends.backlog == 0
        assert [r.status for r in runs(store)] == [RunStatus.SUCCEEDED]
        assert store.calls[-1] == 1
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
        store.close()


def test_a_stalled_pass_names_its_step_and_stops_the_heartbeat(
    memory: MemoryStore, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    ticker = Ticker()
    watch = PassWatch(ticker, stall_after=2.0)
    membership = SingleMembership(**QUIET)
    membership.watch_loop(watch.stalled)
    membership.start(memory, "n1")
    try:
        first = memory.nodes()[0].heartbeat_at
        with caplog.at_level(logging.WARNING), watch.pass_():
            assert watch.stalled() is None
            with watch.step("writing 3 run end(s)"):
                ticker.advance(2.5)
                stalled = watch.stalled()
                assert stalled is not None and stalled.startswith("writing 3 run end(s) for 2.5s")
                clock.advance(1)
                membership.beat()  # does not vouch for a stuck node
                assert memory.nodes()[0].heartbeat_at == first
        assert "not renewing the heartbeat of n1: its loop is stalled on writing 3 run end(s)" in caplog.text
        assert "a pass of the loop took 2.5s" in caplog.text and "waited 2.5s on writing 3 run end(s)" in caplog.text
        assert watch.stalled() is None
        with watch.pass_():
            ticker.advance(1.0)  # a pass within node_ttl/2 is nothing to report
        assert caplog.text.count("a pass of the loop took") == 1
        membership.beat()
        assert memory.nodes()[0].heartbeat_at > first
    finally:
        membership.stop()


class OutageStore(MemoryStore):
    """Heartbeats fail while ``down`` is set (a database outage); each attempt is counted."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock)
        self.down = threading.Event()
        self.attempts = 0
        self.renewed = threading.Event()

    def refresh_heartbeat(self, node_id: str) -> datetime | None:
        self.attempts += 1
        if self.down.is_set():
            if self.attempts >= 3:
                self.down.clear()  # the database answers again from the next attempt
            raise StoreError("connection refused (test)")
        refreshed = super().refresh_heartbeat(node_id)
        self.renewed.set()
        return refreshed


def test_a_failed_heartbeat_is_tried_again_soon_not_a_heartbeat_interval_later(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = OutageStore(clock)
    store.open()
    # Long enough that, tried again only every interval, the fourth attempt would come after 16 s.
    membership = SingleMembership(heartbeat_interval=4.0, node_ttl=10_000.0)
    membership.start(store, "n1")
    store.down.set()
    try:
        with caplog.at_level(logging.WARNING, logger="tickwork.membership"):
            # The first beat of the thread comes an interval after the start and fails; the next
            # ones come every RETRY_AFTER_FAILURE (0.2 s): the fourth attempt succeeds.
            assert store.renewed.wait(12.0), f"{store.attempts} heartbeat attempt(s) in 12 s"
            # The recovery line is logged once the renewing call has returned, just after the
            # event above is set: wait for it (a guard against a hang, not a timing).
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline and not any(
                r.getMessage().startswith("heartbeat of n1 renewed after") for r in caplog.records
            ):
                time.sleep(0.01)
        assert membership.healthy()
        lines = [r.getMessage() for r in caplog.records]
        assert len([m for m in lines if m.startswith("cannot renew the heartbeat of n1")]) == 1, lines
        assert any(m.startswith("heartbeat of n1 renewed after") for m in lines), lines
    finally:
        membership.stop()
        store.close()
