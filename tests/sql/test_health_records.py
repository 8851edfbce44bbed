"""The announced health states on SQLite, PostgreSQL and MySQL (``tickwork_health_announcements``):
a claim lands only on the announcement it read, so of two nodes on one database that read the
same state exactly one announces, also when both claim at the same moment; a repeat keeps when
the state began; the announcement goes with its schedule."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime

import pytest

from tests.support.servers.configs import BACKENDS, ConfigFor
from tickwork.abc import Store
from tickwork.structures import AnnouncementClaim, ScheduleSpec


@pytest.fixture(params=BACKENDS)
def two_stores(request: pytest.FixtureRequest, config_for: ConfigFor) -> Iterator[tuple[Store, Store]]:
    """Two stores on one migrated database: what two nodes of a cluster hold."""
    config = config_for(request.param, migrated=True)
    a, b = config.build_store(), config.build_store()
    a.open()
    b.open()
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def add(store: Store, name: str) -> int:
    return store.add(ScheduleSpec(name, "interval", "1h", "tests.support.health_jobs:fine"), store.now()).id


def test_of_two_nodes_that_read_the_same_announcement_only_one_claims_it(two_stores: tuple[Store, Store]) -> None:
    a, b = two_stores
    sid = add(a, "nightly")
    assert a.announcements([sid]) == b.announcements([sid]) == {}

    # First announcement: both read "none yet", one insert lands.
    first = AnnouncementClaim(sid, "failing", True, None, a.now())
    assert a.claim_announcements([first]) == [True]
    assert b.claim_announcements([first]) == [False]
    seen_a, seen_b = a.announcements([sid])[sid], b.announcements([sid])[sid]
    assert seen_a == seen_b
    assert (seen_a.state, seen_a.alerting, seen_a.version) == ("failing", True, 0)
    assert seen_a.since == seen_a.at

    # A later one lands only on the version read: the node that read before it lost.
    resolved = AnnouncementClaim(sid, "healthy", False, seen_a, b.now())
    assert b.claim_announcements([resolved]) == [True]
    assert a.claim_announcements([resolved]) == [False]
    now = a.announcements([sid])[sid]
    assert (now.state, now.alerting, now.version) == ("healthy", False, 1)
    assert now.since >= seen_a.since


def test_two_nodes_claiming_at_the_same_moment_announce_once(two_stores: tuple[Store, Store]) -> None:
    a, b = two_stores
    ids = [add(a, f"job-{i}") for i in range(20)]
    for round_ in range(3):
        read = a.announcements(ids)
        state = ("failing", "healthy", "overdue")[round_]
        at = a.now()
        claims = [AnnouncementClaim(i, state, state != "healthy", read.get(i), at) for i in ids]
        results = claim_together({"a": a, "b": b}, claims)
        # Each schedule's announcement landed exactly once, on one node or the other.
        assert [x + y for x, y in zip(results["a"], results["b"], strict=True)] == [1] * len(ids)
        after = b.announcements(ids)
        assert {after[i].state for i in ids} == {state}
        assert {after[i].version for i in ids} == {round_}


def claim_together(stores: dict[str, Store], claims: list[AnnouncementClaim]) -> dict[str, list[bool]]:
    """Each store makes the same claims, all released at the same moment; what each landed."""
    results: dict[str, list[bool]] = {}
    start = threading.Barrier(len(stores))

    def claim(name: str, store: Store) -> None:
        start.wait()
        results[name] = store.claim_announcements(claims)

    threads = [threading.Thread(target=claim, args=item) for item in stores.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def test_a_repeat_keeps_when_the_state_began(two_stores: tuple[Store, Store]) -> None:
    a, _ = two_stores
    sid = add(a, "long-failure")
    assert a.claim_announcements([AnnouncementClaim(sid, "failing", True, None, a.now())]) == [True]
    began = a.announcements([sid])[sid]
    assert a.claim_announcements([AnnouncementClaim(sid, "failing", True, began, a.now(), repeat=True)]) == [True]
    repeated = a.announcements([sid])[sid]
    assert repeated.since == began.since
    assert repeated.at >= began.at
    assert repeated.version == began.version + 1
    # Not a repeat: the state begins again.
    assert a.claim_announcements([AnnouncementClaim(sid, "overdue", True, repeated, a.now())]) == [True]
    assert a.announcements([sid])[sid].since == a.announcements([sid])[sid].at


def test_an_announcement_goes_with_its_schedule(two_stores: tuple[Store, Store]) -> None:
    a, b = two_stores
    kept, removed = add(a, "kept"), add(a, "removed")
    claims = [AnnouncementClaim(i, "failing", True, None, a.now()) for i in (kept, removed)]
    assert a.claim_announcements(claims) == [True, True]
    assert set(b.all_announcements()) == {kept, removed}
    a.remove("removed")
    assert set(b.announcements([kept, removed])) == {kept}
    assert b.all_announcements() == b.announcements([kept])
    # A schedule removed between the read and the claim is not announced.
    assert b.claim_announcements([AnnouncementClaim(removed, "failing", True, None, b.now())]) == [False]
    # A new schedule never inherits what was said about a removed one.
    again = add(a, "removed")
    assert a.announcements([again]) == {}
    assert isinstance(a.announcements([kept])[kept].at, datetime)
