"""The engine's estimate of the database clock between readings (engine/clock.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tickwork.engine.clock import DatabaseClock
from tickwork.testing import MemoryStore

READ = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


class SteppedMonotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_estimate_taken_back_equals_the_estimate_made_then() -> None:
    store = MemoryStore(clock=lambda: READ)
    store.open()
    mono = SteppedMonotonic()
    clock = DatabaseClock(store, monotonic=mono)
    clock.read()
    claimed_at = READ + timedelta(milliseconds=3)  # a claim answered after the reading
    mono_claimed = 100.004
    for at in (100.004, 100.5, 102.25):
        later = clock.since_claim(claimed_at, mono_claimed, 103.0)
        assert clock.before(later, 103.0 - at) == clock.since_claim(claimed_at, mono_claimed, at)
    # Never ahead of what the estimate at that moment was, whichever bound is the later one.
    assert clock.before(clock.since_claim(READ, 100.0, 103.0), 3.0) == clock.since_claim(READ, 100.0, 100.0)


def test_a_fake_clock_stands_still_between_steps() -> None:
    fake = datetime(2030, 1, 1, tzinfo=UTC)
    clock = DatabaseClock(MemoryStore(), fake=lambda: fake, monotonic=SteppedMonotonic())
    assert clock.before(clock.since_claim(fake, 1.0, 9.0), 5.0) == fake
