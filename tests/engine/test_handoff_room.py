"""Fires for an executor that hands off count as a tenth of a run against ``max_in_flight``
(``tickwork.abc.HANDOFFS_PER_RUN``, docs/handoff.md#options): a node claims a minute of
hand-offs larger than ``max_in_flight`` ahead, while the runs it runs itself stay bounded by it.
An engine over a real SQLite store on a fake clock, its claims read from its listener."""

from __future__ import annotations

from datetime import timedelta
from typing import ClassVar

from tests.support.engines import ClaimCounts, add, make_engine
from tests.support.stores import T0
from tickwork.abc import HANDOFFS_PER_RUN
from tickwork.sql.store import SQLStore
from tickwork.testing import FakeClock
from tickwork_local.executor import LocalExecutor


class HandingOff(LocalExecutor):
    """Runs here, but counts as an executor that hands its runs to a broker."""

    hands_off: ClassVar[bool] = True


def claimed_ahead(store: SQLStore, clock: FakeClock, executor: LocalExecutor, *, fires: int) -> list[int]:
    """The claims an engine with ``max_in_flight`` 20 and a batch of 10 takes, 0.2 s before a
    minute, of ``fires`` schedules due at that minute (every fire claimed ahead is held)."""
    for i in range(fires):
        add(store, "record", name=f"minute-{i:03d}")
    engine, _ = make_engine(store, clock, executor=executor, max_in_flight=20, batch_size=10, lookahead=1.0)
    claims = ClaimCounts()
    engine.listener = claims
    try:
        clock.set(T0 + timedelta(seconds=59.8))
        while engine.tick():
            pass
    finally:
        executor.shutdown(wait=False)
        engine.membership.stop()
    return claims.counts


def test_a_node_that_runs_its_fires_itself_holds_max_in_flight_ahead(sqlite_store: SQLStore, clock: FakeClock) -> None:
    assert claimed_ahead(sqlite_store, clock, LocalExecutor(max_workers=2), fires=75) == [10, 10]


def test_a_node_that_hands_off_claims_the_whole_minute_ahead(sqlite_store: SQLStore, clock: FakeClock) -> None:
    # 75 hand-offs count as 8 runs (75 / 10, rounded up): within max_in_flight 20.
    assert claimed_ahead(sqlite_store, clock, HandingOff(max_workers=2), fires=75) == [10] * 7 + [5]


def test_hand_offs_stop_at_ten_times_max_in_flight(sqlite_store: SQLStore, clock: FakeClock) -> None:
    claims = claimed_ahead(sqlite_store, clock, HandingOff(max_workers=2), fires=250)
    # Never more than 20 runs' worth: 200 hand-offs at most. A claim never asks for more than
    # the room left counted as runs (its fires might all run here), so the last run's worth is
    # filled one fire at a time and the node stops once 191 count as 20.
    assert 19 * HANDOFFS_PER_RUN < sum(claims) <= 20 * HANDOFFS_PER_RUN
