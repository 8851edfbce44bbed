"""The store contract's tests of which buckets' fires a claim takes: only the owned buckets'
(``buckets``; ``None``: every bucket, ``[]``: none), the first and last bucket included, and
another bucket's fire once it is overdue by more than ``steal_after`` (its owners are behind),
which :meth:`~tickwork.abc.Store.next_due` counts from the moment it may be stolen."""

from __future__ import annotations

from datetime import datetime, timedelta

from ..abc import Store
from ..structures import BUCKETS, Claim, bucket_of
from .contract_helpers import MINUTE, claim_all, spec


class BucketContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    def test_bucket_filter(self, store: Store) -> None:
        t = store.now()
        names = [f"job-{i}" for i in range(20)]
        for name in names:
            store.add(spec(name), t)
        mine = sorted({bucket_of(n) for n in names[:7]})
        claims = claim_all(store, buckets=mine)
        assert {c.spec.name for c in claims} == {n for n in names if bucket_of(n) in mine}
        assert store.next_due(buckets=mine) is None
        assert store.next_due(buckets=None) == t

    def test_bucket_filter_at_the_edges_and_owning_nothing(self, store: Store) -> None:
        t = store.now()
        edge = {0: "", BUCKETS - 1: ""}
        i = 0
        while not all(edge.values()):
            name = f"edge-{i}"
            if bucket_of(name) in edge and not edge[bucket_of(name)]:
                edge[bucket_of(name)] = name
            i += 1
        for name in edge.values():
            store.add(spec(name), t)
        assert claim_all(store, buckets=[]) == [] and store.next_due(buckets=[]) is None
        assert [c.spec.name for c in claim_all(store, buckets=[BUCKETS - 1])] == [edge[BUCKETS - 1]]
        assert [c.spec.name for c in claim_all(store, buckets=[0, 5])] == [edge[0]]

    def test_steal_after_takes_other_buckets_fires_only_when_overdue(self, store: Store) -> None:
        t = store.now()
        names = [f"steal-{i}" for i in range(40)]
        mine = sorted({bucket_of(n) for n in names[:3]})
        theirs = [n for n in names if bucket_of(n) not in mine]
        store.add(spec(names[0]), t + timedelta(seconds=30))  # mine, within the look-ahead
        store.add(spec(theirs[0]), t - 10 * MINUTE)  # theirs, long overdue
        store.add(spec(theirs[1]), t - timedelta(seconds=5))  # theirs, overdue but not by enough
        store.add(spec(theirs[2]), t + timedelta(seconds=30))  # theirs, not due yet
        claims = store.claim_due("n1", limit=1000, buckets=mine, ahead=60.0, steal_after=60.0)
        assert sorted(c.spec.name for c in claims) == sorted([names[0], theirs[0]])
        # Without buckets every bucket is claimable anyway; steal_after changes nothing.
        assert sorted(c.spec.name for c in store.claim_due("n2", limit=1000, buckets=None, steal_after=3600.0)) == [
            theirs[1]
        ]
        # Owning nothing: only what is overdue by more than steal_after.
        store.add(spec("steal-late"), t - 2 * MINUTE)
        assert claim_all(store, "n3", buckets=[]) == []
        stolen = store.claim_due("n3", limit=1000, buckets=[], steal_after=60.0)
        assert [c.spec.name for c in stolen] == ["steal-late"]

    def test_next_due_counts_other_buckets_from_when_they_may_be_stolen(self, store: Store) -> None:
        t = store.now()
        names = [f"due-{i}" for i in range(40)]
        mine = sorted({bucket_of(names[0])})
        theirs = [n for n in names if bucket_of(n) not in mine]
        store.add(spec(names[0]), t + 10 * MINUTE)
        store.add(spec(theirs[0]), t + MINUTE)  # not due yet: its owners claim it
        assert store.next_due(buckets=mine, steal_after=30.0) == t + 10 * MINUTE
        assert store.next_due(buckets=[], steal_after=30.0) is None
        store.add(spec(theirs[1]), t - MINUTE)  # due and still idle: its owners are behind
        assert store.next_due(buckets=mine) == t + 10 * MINUTE
        assert store.next_due(buckets=mine, steal_after=30.0) == t - MINUTE + timedelta(seconds=30)
        assert store.next_due(buckets=mine, steal_after=3600.0) == t + 10 * MINUTE
        assert store.next_due(buckets=[], steal_after=30.0) == t - MINUTE + timedelta(seconds=30)
        assert store.next_due(buckets=[]) is None
        assert store.next_due(buckets=None, steal_after=30.0) == t - MINUTE

    def test_a_drained_claim_tells_the_next_due_time_as_next_due_would(self, store: Store) -> None:
        """``claim_due``'s ``next_due`` (where :attr:`~tickwork.abc.Store.claim_reads_next_due`):
        called, if at all, only by a claim that took fewer fires than its limit, and with what
        :meth:`~tickwork.abc.Store.next_due` answers right after it, stealing included."""
        t = store.now()
        names = [f"told-{i}" for i in range(40)]
        mine = sorted({bucket_of(names[0]), bucket_of(names[1])})
        theirs = [n for n in names if bucket_of(n) not in mine]
        ours = [n for n in names if bucket_of(n) in mine]
        store.add(spec(ours[0]), t - timedelta(seconds=1))
        store.add(spec(ours[1]), t - timedelta(seconds=1))
        store.add(spec(theirs[0]), t - timedelta(seconds=5))  # overdue, stealable 30 s later
        told: list[datetime | None] = []

        def claim(limit: int) -> list[Claim]:
            if not store.claim_reads_next_due:
                return store.claim_due("n1", limit=limit, buckets=mine, steal_after=30.0)
            return store.claim_due("n1", limit=limit, buckets=mine, steal_after=30.0, next_due=told.append)

        # A full claim (its limit reached) leaves the next due time unread.
        (first,) = claim(1)
        assert told == []
        (second,) = claim(10)
        assert {first.spec.name, second.spec.name} == {ours[0], ours[1]}
        expected = store.next_due(buckets=mine, steal_after=30.0)
        assert expected == t + timedelta(seconds=25)
        assert told in ([], [expected])
        # A claim that finds nothing leaves it unread too.
        del told[:]
        assert claim(10) == []
        assert told == []
