"""The next due time read by the claim that drained what was due (``Store.claim_reads_next_due``):
the engine uses it instead of a read of its own, unless a change was told while the claim was out."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest

from tests.support import jobs_for_tests as jobs
from tests.support.engines import add
from tests.support.engines import new_engine as new_engine  # the fixture
from tests.support.stores import T0
from tickwork.abc import NextDueSink
from tickwork.engine import Engine
from tickwork.structures import Claim
from tickwork.testing import FakeClock, MemoryStore


class CountedReads(MemoryStore):
    """A memory store that counts its own next due reads, and can tell of a change (``during``)
    while a claim is out, as the change poll of a running node would."""

    def __init__(self, *, reads_in_claims: bool, **kw: Any) -> None:
        super().__init__(**kw)
        self.claim_reads_next_due = reads_in_claims  # type: ignore[misc]
        self.reads = 0
        self.during: Callable[[], None] | None = None

    def next_due(self, **kw: Any) -> Any:
        self.reads += 1
        return super().next_due(**kw)

    def claim_due(self, node_id: str, *, next_due: NextDueSink | None = None, **kw: Any) -> list[Claim]:
        if self.during is not None:
            self.during()
        if next_due is None:
            return super().claim_due(node_id, **kw)

        def told(due: Any) -> None:
            self.reads -= 1  # read inside the claim: not one of the node's own reads
            next_due(due)

        return super().claim_due(node_id, next_due=told, **kw)


@pytest.fixture(autouse=True)
def _reset_jobs() -> Iterator[None]:
    jobs.calls.clear()
    yield
    jobs.calls.clear()


def _store(clock: FakeClock, reads_in_claims: bool) -> CountedReads:
    store = CountedReads(reads_in_claims=reads_in_claims, clock=clock)
    store.upgrade()
    store.open()
    return store


def _claim_with_args(engine: Engine, store: CountedReads, clock: FakeClock) -> tuple[bool, int]:
    """Run up to ``with_args``'s fire at T0 + 15 s (``record`` waits for T0 + 60 s); whether the
    next due time was known right after the claim, and the node's own reads from the claim on."""
    add(store, "record")  # type: ignore[arg-type]
    add(store, "with_args", "*/15 * * * * *", arguments={"city": "x"})  # type: ignore[arg-type]
    engine.tick()
    engine.sleep_seconds()
    clock.advance(15)
    before = store.reads
    engine.tick()  # claims with_args alone: the claim drains what is due
    known = engine.gate.fresh()
    if known:  # told by the claim: record's time
        assert engine.gate.next_due == T0 + timedelta(seconds=60)
    engine.sleep_seconds()
    assert engine.gate.next_due in (T0 + timedelta(seconds=60), T0 + timedelta(seconds=30))  # (30: with_args ended)
    return known, store.reads - before


@pytest.mark.parametrize("reads_in_claims", [True, False])
def test_a_drained_claim_s_next_due_time_saves_the_read_after_it(
    clock: FakeClock, new_engine: Callable[..., Engine], reads_in_claims: bool
) -> None:
    store = _store(clock, reads_in_claims)
    engine = new_engine(store, lookahead=0.0)
    assert _claim_with_args(engine, store, clock) == (reads_in_claims, 0 if reads_in_claims else 1)
    assert engine.gate.reads_in_claims == (1 if reads_in_claims else 0)
    engine.drain(5)
    assert jobs.calls == ["x:1"]


def test_a_change_told_while_the_claim_was_out_is_read_again(
    clock: FakeClock, new_engine: Callable[..., Engine]
) -> None:
    store = _store(clock, reads_in_claims=True)
    engine = new_engine(store, lookahead=0.0)
    store.during = engine.wake  # every claim: a change arrives while it is out
    assert _claim_with_args(engine, store, clock) == (False, 1)
    assert engine.gate.reads_in_claims == 1  # told, but not trusted


def test_a_store_that_never_tells_keeps_its_signature(clock: FakeClock, new_engine: Callable[..., Engine]) -> None:
    """A store written before ``next_due`` existed (no such parameter) is never given it."""

    class Older(MemoryStore):
        claim_reads_next_due = False

        def claim_due(  # type: ignore[override]
            self,
            node_id: str,
            *,
            limit: int,
            buckets: Sequence[int] | None,
            ahead: float = 0.0,
            steal_after: float | None = None,
            namespaces: Sequence[str] | None = None,
        ) -> list[Claim]:
            return super().claim_due(
                node_id, limit=limit, buckets=buckets, ahead=ahead, steal_after=steal_after, namespaces=namespaces
            )

    store = Older(clock=clock)
    store.upgrade()
    store.open()
    engine = new_engine(store, lookahead=0.0)
    add(store, "with_args", "*/15 * * * * *", arguments={"city": "x"})  # type: ignore[arg-type]
    clock.advance(15)
    engine.tick()
    engine.drain(5)
    assert jobs.calls == ["x:1"]
