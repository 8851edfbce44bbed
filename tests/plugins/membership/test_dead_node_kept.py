"""A dead node whose release left rows behind (another database session held them locked: the
store keeps its record and releases the rest once they are free) is judged again at every beat:
it stays out of the live nodes, and its death is announced once, not at every beat. On the
in-memory store with the release's answers scripted, heartbeats on a fake clock."""

from __future__ import annotations

import logging
import time

import pytest

from tickwork.testing import FakeClock, MemoryStore
from tickwork_membership.single import SingleMembership

INTERVAL = 0.05
TTL = 0.2


class KeptRecord(MemoryStore):
    """Releases of a dead node answer ``answers`` in turn, keeping its record (rows passed over
    as locked), then release it for good."""

    def __init__(self, clock: FakeClock, answers: list[int]) -> None:
        super().__init__(clock=clock)
        self.answers = answers
        self.asked = 0

    def release_dead_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        self.asked += 1
        if self.answers:
            return self.answers.pop(0)
        return super().release_dead_node(node_id, stale_after, reason)


def test_a_dead_node_kept_for_its_locked_rows_is_announced_once_and_never_live(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = KeptRecord(clock, [1, 0, 0])
    store.open()
    store.heartbeat("b")
    membership = SingleMembership(heartbeat_interval=INTERVAL, node_ttl=TTL)
    membership.store, membership.node_id = store, "a"
    until = time.monotonic() + TTL * 1.5
    while time.monotonic() < until:  # beating for a whole TTL: it judges the others from then on
        store.heartbeat("b")
        membership.beat()
        time.sleep(INTERVAL / 5)
    clock.advance(TTL * 2)
    with caplog.at_level(logging.WARNING):
        for _ in range(4):
            membership.beat()
            assert membership.live_nodes == ["a"]
    assert store.asked == 4
    assert caplog.text.count("node b is dead") == 1
    assert [n.id for n in store.nodes()] == ["a"]
    # Gone for good: a node of that name that dies again is announced again.
    store.heartbeat("b")
    membership.beat()
    assert sorted(membership.live_nodes) == ["a", "b"]
    clock.advance(TTL * 2)
    with caplog.at_level(logging.WARNING):
        membership.beat()
    assert caplog.text.count("node b is dead") == 2
