"""The hash ring: balance, minimal movement, two distinct owners per schedule."""

from __future__ import annotations

import collections

import pytest

from tickwork.structures import BUCKETS, bucket_of
from tickwork_membership.ring import BucketRing

NAMES = [f"schedule-{i}" for i in range(50_000)]
BUCKET_OF = [bucket_of(n) for n in NAMES]


def nodes(n: int) -> list[str]:
    return [f"node-{i}" for i in range(n)]


@pytest.mark.parametrize("n", range(3, 11))
def test_balance_with_64_virtual_nodes(n: int) -> None:
    ring = BucketRing(nodes(n), vnodes=64, owners=2)
    load: collections.Counter[str] = collections.Counter()
    for b in BUCKET_OF:
        load.update(ring.owners_of(b))
    mean = sum(load.values()) / n
    assert set(load) == set(nodes(n))
    assert max(load.values()) / mean <= 1.25


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_every_bucket_has_distinct_owners(n: int) -> None:
    ring = BucketRing(nodes(n), vnodes=64, owners=2)
    for b in range(BUCKETS):
        owners = ring.owners_of(b)
        assert len(owners) == min(2, n) and len(set(owners)) == len(owners)


def test_minimal_movement_when_a_node_joins_or_leaves() -> None:
    before = BucketRing(nodes(5))
    joined = BucketRing([*nodes(5), "node-new"])
    changed = [b for b in range(BUCKETS) if set(before.owners_of(b)) != set(joined.owners_of(b))]
    # Only buckets the newcomer now owns change, and only by one owner each.
    assert all("node-new" in joined.owners_of(b) for b in changed)
    assert all(len(set(before.owners_of(b)) & set(joined.owners_of(b))) == 1 for b in changed)
    assert len(changed) == len(joined.buckets_of("node-new"))
    assert len(changed) < BUCKETS * 2 / 6 * 1.3  # about owners/N of the buckets

    left = BucketRing([n for n in nodes(5) if n != "node-2"])
    changed = [b for b in range(BUCKETS) if set(before.owners_of(b)) != set(left.owners_of(b))]
    assert all("node-2" in before.owners_of(b) for b in changed)
    assert len(changed) == len(before.buckets_of("node-2"))


def test_same_live_set_gives_same_assignment_on_every_node() -> None:
    a = BucketRing(["x", "y", "z"])
    b = BucketRing(["z", "x", "y"])
    assert a.assignment() == b.assignment()


def test_no_live_nodes_owns_nothing() -> None:
    assert BucketRing([]).buckets_of("x") == []
