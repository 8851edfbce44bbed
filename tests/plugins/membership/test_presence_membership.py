"""How the heartbeat uses presence (plugins/tickwork_membership/heartbeat.py): a node whose
heartbeat is 1.5 intervals old is asked about only once this node's own presence has been held
(and it has beaten) for 3 intervals, and released only when the store says its session ended; a fresh node is
never asked; ``presence = false`` holds nothing. On the in-memory store with presence modelled
by hand, heartbeats on a fake clock."""

from __future__ import annotations

import logging
import time

import pytest

from tickwork.errors import ConfigError
from tickwork.testing import FakeClock, MemoryStore
from tickwork_membership.single import SingleMembership

INTERVAL = 0.05
TTL = 0.2


class PresenceMemory(MemoryStore):
    """The in-memory store with a presence the test sets: how long this node's has been held,
    and which nodes' sessions ended."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock)
        self.held_for: float | None = 0.0
        self.ended: set[str] = set()
        self.asked: list[str] = []
        self.holds = 0

    def hold_presence(self, node_id: str) -> float | None:
        self.holds += 1
        return self.held_for

    def release_absent_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        self.asked.append(node_id)
        if node_id not in self.ended:
            return None
        return self.release_dead_node(node_id, stale_after, reason)


def member(store: PresenceMemory, **options: object) -> SingleMembership:
    """A membership whose beats the test calls (no heartbeat thread), judging others already."""
    membership = SingleMembership(heartbeat_interval=INTERVAL, node_ttl=TTL, **options)  # type: ignore[arg-type]
    membership.store, membership.node_id = store, "a"
    # Beating (so healthy) for a whole TTL: it judges the others by either rule from then on.
    until = time.monotonic() + TTL * 1.5
    while time.monotonic() < until:
        membership.beat()
        time.sleep(INTERVAL / 5)
    return membership


def test_a_node_whose_session_ended_is_released_before_node_ttl(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = PresenceMemory(clock)
    store.open()
    store.heartbeat("b")
    store.heartbeat("c")
    membership = member(store)
    clock.advance(INTERVAL * 2)  # b and c: 2 intervals silent, well within node_ttl
    store.heartbeat("c")  # c beats on
    store.held_for = INTERVAL * 2  # our own presence is too young to judge by
    membership.beat()
    assert store.asked == [] and sorted(membership.live_nodes) == ["a", "b", "c"]
    store.held_for = INTERVAL * 3
    membership.beat()
    assert store.asked == ["b"] and sorted(membership.live_nodes) == ["a", "b", "c"]  # b's session is there
    store.ended.add("b")
    with caplog.at_level(logging.WARNING):
        membership.beat()
    assert store.asked == ["b", "b"] and sorted(membership.live_nodes) == ["a", "c"]
    assert "node b is dead (its database session ended; last heartbeat 0.1s ago)" in caplog.text
    assert sorted(n.id for n in store.nodes()) == ["a", "c"]


def test_without_presence_nothing_is_held_or_asked(clock: FakeClock) -> None:
    store = PresenceMemory(clock)
    store.open()
    store.heartbeat("b")
    store.ended.add("b")
    store.held_for = TTL * 2
    membership = member(store, presence=False)
    clock.advance(INTERVAL * 2)
    membership.beat()
    assert store.holds == 0 and store.asked == [] and sorted(membership.live_nodes) == ["a", "b"]
    clock.advance(TTL)  # past node_ttl: the heartbeat rule, as ever
    membership.beat()
    assert membership.live_nodes == ["a"]


def test_presence_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match=r"membership\.presence: expected bool, got str 'yes'"):
        SingleMembership(presence="yes")  # type: ignore[arg-type]
