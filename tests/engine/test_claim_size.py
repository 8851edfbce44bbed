"""A node's claims grow while a backlog lasts and nothing waits on it for its time before a larger
claim would be back (docs/claim-protocol.md#claim-size): the sizing rule alone, then an engine over
a real SQLite store on a fake clock, its claims' sizes read from its listener."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import ClaimCounts, add, make_engine, step
from tests.support.stores import T0
from tickwork.engine.claimsize import ClaimSize
from tickwork.sql.store import SQLStore
from tickwork.testing import FakeClock


class Waiting:
    """A fire waiting on the node for its time, due in ``due_in`` seconds (``None``: none waits),
    and the horizons the rule asked about."""

    def __init__(self) -> None:
        self.due_in: float | None = None
        self.asked: list[float] = []

    @property
    def now(self) -> bool:
        return self.due_in is not None

    @now.setter
    def now(self, value: bool) -> None:
        self.due_in = 0.0 if value else None

    def __call__(self, seconds: float) -> bool:
        self.asked.append(seconds)
        return self.due_in is not None and self.due_in <= seconds


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


def test_a_fire_due_after_the_larger_claim_would_be_back_does_not_stop_the_growth() -> None:
    waiting = Waiting()
    size = ClaimSize(10, 1000, waiting, margin=0.05)
    size.claimed(10, 10, 0.01)  # 1 ms per fire: a claim of 20 is back in ~20 ms
    waiting.due_in = 0.5  # the fires just claimed ahead, due half a lookahead later
    assert size.next() == 20
    size.claimed(20, 20, 0.02)
    assert size.next() == 40
    # 3 x 40 ms + the 50 ms margin = 0.17 s: a fire due in 0.1 s would start late
    waiting.due_in = 0.1
    assert size.next() == 10
    assert waiting.asked[-1] == pytest.approx(3 * 0.001 * 40 + 0.05)


def test_a_slow_claim_makes_the_next_one_stop_growing_sooner() -> None:
    waiting = Waiting()
    size = ClaimSize(10, 1000, waiting, margin=0.05)
    waiting.due_in = 0.5
    size.claimed(10, 10, 0.2)  # 20 ms per fire: a claim of 20 would take ~0.4 s
    assert size.next() == 10


def test_a_claim_that_reached_ahead_of_its_fires_time_does_not_grow() -> None:
    size = ClaimSize(10, 1000, Waiting())
    size.claimed(10, 10, 0.01, ahead=True)
    assert size.next() == 10
    size.claimed(10, 10, 0.01)
    assert size.next() == 20


def test_before_any_claim_was_timed_any_waiting_fire_keeps_the_batch() -> None:
    waiting = Waiting()
    size = ClaimSize(10, 1000, waiting)
    waiting.due_in = 3600.0
    size.claimed(10, 10)
    assert size.next() == 10


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


def claims_of_a_herd(store: SQLStore, clock: FakeClock, *, lookahead: float, at: float) -> list[int]:
    """The sizes of the claims an engine with a batch of 10 takes of 75 fires due at +60 s, its
    clock at ``at`` seconds."""
    for i in range(75):
        add(store, "record", name=f"herd-{i:02d}")
    engine, executor = make_engine(store, clock, lookahead=lookahead, batch_size=10)
    claims = ClaimCounts()
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
    # Every owner of fires claimed ahead claims them at about the same time, a batch each in
    # turn: a node whose claims grew would take most of them before the others' first batch.
    assert claims_of_a_herd(sqlite_store, clock, lookahead=1.0, at=59.8) == [10] * 7 + [5]


def test_a_herd_grows_its_claims_beside_a_retry_due_a_minute_later(sqlite_store: SQLStore, clock: FakeClock) -> None:
    # A retry waits on the node for its time, a minute away: claims of the overdue herd beside
    # it are back long before, so they grow as if nothing waited.
    add(sqlite_store, "boom", "*/5 * * * *", retries=1, retry_backoff=timedelta(seconds=60))
    engine, executor = make_engine(sqlite_store, clock, lookahead=0.0, batch_size=10)
    claims = ClaimCounts()
    engine.listener = claims
    try:
        clock.set(T0 + timedelta(seconds=301))
        step(engine)  # boom fails; its retry waits a minute
        assert engine.one_pass.pacing.waiting_within(3600.0)
        assert not engine.one_pass.pacing.waiting_within(10.0)
        for i in range(75):
            add(sqlite_store, "record", name=f"herd-{i:02d}")  # due at +360
        claims.counts.clear()
        clock.set(T0 + timedelta(seconds=361))
        step(engine)
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
    assert claims.counts == [10, 20, 40, 5]
