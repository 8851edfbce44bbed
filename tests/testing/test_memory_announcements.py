"""``MemoryStore`` (and any store without its own) keeps the announced health states in the store
object (:class:`tickwork.abc.healthrecords.HealthRecords`): the same fence as the SQL store's,
within one process, and the whole failure streak counted from the history."""

from __future__ import annotations

from tickwork.structures import AnnouncementClaim, ScheduleSpec
from tickwork.testing import MemoryStore


def test_the_default_announcements_land_once_on_the_version_read() -> None:
    store = MemoryStore()
    store.upgrade()
    store.open()
    sid = store.add(ScheduleSpec("nightly", "interval", "1h", "tests.support.health_jobs:fine"), store.now()).id
    at = store.now()
    first = AnnouncementClaim(sid, "failing", True, None, at)
    assert store.claim_announcements([first, first]) == [True, False]
    began = store.announcements([sid])[sid]
    assert (began.state, began.version, began.since, began.at) == ("failing", 0, at, at)

    repeat = AnnouncementClaim(sid, "failing", True, began, store.now(), repeat=True)
    assert store.claim_announcements([repeat]) == [True]
    assert store.claim_announcements([repeat]) == [False]  # stale: the version moved on
    after = store.announcements([sid])[sid]
    assert (after.since, after.version) == (began.since, 1)
    assert store.announcements([sid + 1]) == {}
    assert store.all_announcements() == {sid: after}
    # No runs yet: no failures to count.
    assert store.count_failures_since(store.get("nightly"), None) == 0
    store.remove("nightly")
    assert store.all_announcements() == {}
