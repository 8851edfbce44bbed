"""A node's claims grow while a backlog lasts and nothing waits on it for its time
(docs/claim-protocol.md#claim-size): the sizing rule alone, then an engine over a real SQLite store
on a fake clock, its claims' sizes read from its listener."""

from __future__ import annotations

from datetime import timedelta

from tests.support import jobs_for_tests as jobs
from tests.support.engines import add, make_engine, step
from tests.support.stores import T0
from tickwork.engine.claimsize import ClaimSize
from tickwork.engine.listener import EngineListener
from tickwork.sql.store import SQLStore
from tickwork.testing import FakeClock


class Waiting:
    """Whether a fire waits on the node for its time, as the test says."""

    def __init__(self) -> None:
        self.now = False

    def __call__(self) -> bool:
        return self.now


def test_a_full_claim_with_nothing_waiting_doubles_the_next_up_to_the_ceiling() -> None:
    size = ClaimSize(10, 35, Waiting())
    sizes = []
    for _ in range(4):
        sizes.append(size.next())
        size.claimed(sizes[-1], sizes[-1])
    assert sizes == [10, 20, 35, 35]
    size.claimed(3, 35)  # the backlog is gone
    assert size.next() == 10


def test_anything_waiting_brings_claims_back_to_the_batch() -> None:
    waiting = Waiting()
    size = ClaimSize(10, 1000, waiting)
    size.claimed(10, 10)
    assert size.next() == 20
    waiting.now = True  # a fire claimed ahead is held for its time
    assert size.next() == 10
    size.claimed(10, 10)
    assert size.next() == 10
    waiting.now = False
    size.claimed(10, 10)
    assert size.next() == 20


def test_a_claim_limited_by_the_room_left_keeps_its_size() -> None:
    size = ClaimSize(10, 1000, Waiting())
    size.claimed(10, 10)
    size.claimed(20, 20)
    assert size.next() == 40
    size.claimed(7, 7)  # full, but the room (7) was the limit: no news about the backlog
    assert size.next() == 40


def test_a_store_that_does_not_take_more_never_grows_the_claims() -> None:
    size = ClaimSize(10, 10, Waiting())
    size.claimed(10, 10)
    assert size.next() == 10


class Claims(EngineListener):
    def __init__(self) -> None:
        self.counts: list[int] = []

    def claimed(self, count: int, seconds: float) -> None:
        if count:
            self.counts.append(count)


def claims_of_a_herd(store: SQLStore, clock: FakeClock, *, lookahead: float, at: float) -> list[int]:
    """The sizes of the claims an engine with a batch of 10 takes of 75 fires due at +60 s, its
    clock at ``at`` seconds."""
    for i in range(75):
        add(store, "record", name=f"herd-{i:02d}")
    engine, executor = make_engine(store, clock, lookahead=lookahead, batch_size=10)
    claims = Claims()
    engine.listener = claims
    try:
        clock.set(T0 + timedelta(seconds=at))
        step(engine)
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
    return claims.counts


def test_an_overdue_herd_is_claimed_in_growing_claims(sqlite_store: SQLStore, clock: FakeClock) -> None:
    jobs.calls.clear()
    assert claims_of_a_herd(sqlite_store, clock, lookahead=0.0, at=61) == [10, 20, 40, 5]
    assert len(jobs.calls) == 75


def test_fires_claimed_ahead_are_claimed_a_batch_at_a_time(sqlite_store: SQLStore, clock: FakeClock) -> None:
    # Held for their time, each claim's fires wait on the node: a larger claim would be a longer
    # pass before their start.
    assert claims_of_a_herd(sqlite_store, clock, lookahead=1.0, at=59.8) == [10] * 7 + [5]
