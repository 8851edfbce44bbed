"""The part of :class:`~tickwork.testing.StoreContract` about schedule semantics: the rarer options
stored and claimed as given, pauses (with a note, an end, resumed by the housekeeping) and the
consecutive failures counted for ``pause_after_failures`` (docs/triggers.md#schedule-options)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ..abc import Store
from ..errors import ConfigError
from ..structures import BUCKETS, PAUSED_BY_TICKWORK, Finish, Outcome, Pause, RunStatus, ScheduleSpec, failures_note

MINUTE = timedelta(minutes=1)
FAILED = Outcome(RunStatus.FAILED, error="boom")
OK = Outcome(RunStatus.SUCCEEDED)


def _spec(name: str, **fields: object) -> ScheduleSpec:
    values: dict[str, object] = {"name": name, "trigger_kind": "cron", "expression": "* * * * *", "target": "m:f"}
    values.update(fields)
    return ScheduleSpec(**values)  # type: ignore[arg-type]


def _fire_once(store: Store, name: str, outcome: Outcome) -> None:
    """Make ``name`` due, claim it and end it with ``outcome`` (next fire a minute on)."""
    store.fire_now(name)
    [claim] = [c for c in store.claim_due("n1", limit=1000, buckets=None) if c.spec.name == name]
    assert store.finish("n1", [Finish(claim, outcome, store.now() + MINUTE)]) == [True]


class SemanticsContract:
    """Mixed into :class:`~tickwork.testing.StoreContract` (which provides the ``store`` fixture)."""

    def test_the_rarer_options_are_stored_and_claimed_as_given(self, store: Store) -> None:
        given = _spec(
            "opts",
            pause_after_failures=3,
            jitter=timedelta(seconds=30),
            start_at=datetime(2026, 1, 1, tzinfo=UTC),
            end_at=datetime(2030, 1, 1, 12, 30, tzinfo=UTC),
            misfire_grace=timedelta(seconds=90),
            max_catchup=4,
            also=("30 18 * * *",),
            exclude=("*-12-25", "Sat,Sun"),
        )
        store.add(given, store.now())
        store.add(_spec("plain"), store.now())
        assert store.get("opts").spec == given
        claimed = {c.spec.name: c.spec for c in store.claim_due("n1", limit=1000, buckets=None)}
        assert claimed == {"opts": given, "plain": _spec("plain")}

    def test_a_pause_keeps_its_note_and_end_until_enabled(self, store: Store) -> None:
        t = store.now()
        store.add(_spec("p"), t)
        until = t + timedelta(hours=2)
        paused = store.set_enabled("p", False, None, Pause("db migration", by="ops", until=until))
        assert paused.spec.enabled is False and paused.next_fire is None
        assert paused.pause is not None
        assert (paused.pause.note, paused.pause.by, paused.pause.until) == ("db migration", "ops", until)
        assert paused.pause.at is not None and paused.pause.at >= t
        assert store.claim_due("n1", limit=10, buckets=None) == []
        # A changed definition (still disabled) keeps the pause; enabling ends it.
        store.update(_spec("p", enabled=False, retries=2), None)
        assert store.get("p").pause == paused.pause
        resumed = store.set_enabled("p", True, t)
        assert resumed.pause is None and resumed.spec.enabled
        assert [c.spec.name for c in store.claim_due("n1", limit=10, buckets=None)] == ["p"]

    def test_resume_expired_enables_only_the_pauses_whose_end_passed(self, store: Store) -> None:
        t = store.now()
        for name in ("ended", "later", "open"):
            store.add(_spec(name), t)
        store.set_enabled("ended", False, None, Pause("short", until=t + timedelta(milliseconds=1)))
        store.set_enabled("later", False, None, Pause("long", until=t + timedelta(days=1)))
        store.set_enabled("open", False, None, Pause("until resumed"))
        soonest = store.next_pause_end()
        assert soonest is not None and soonest <= 0.001  # "short" ends first
        while store.now() <= t + timedelta(milliseconds=1):
            pass  # the store's own clock passes the first end
        asked: list[tuple[str, datetime]] = []

        def next_fire(spec: ScheduleSpec, now: datetime) -> datetime:
            asked.append((spec.name, now))
            return now + MINUTE

        resumed = store.resume_expired(next_fire)
        assert [s.name for s in resumed] == ["ended"]
        assert resumed[0].pause is not None and resumed[0].pause.note == "short"
        [(name, now)] = asked
        after = store.get("ended")
        assert after.spec.enabled and after.pause is None and after.next_fire == now + MINUTE
        assert not store.get("later").spec.enabled and not store.get("open").spec.enabled
        assert store.resume_expired(next_fire) == []
        left = store.next_pause_end()  # "later" ends in a day; "open" has no end
        assert left is not None and 86_000 < left <= 86_400
        store.set_enabled("later", True, None)
        assert store.next_pause_end() is None

    def test_pause_after_failures_pauses_after_that_many_failed_fires_in_a_row(self, store: Store) -> None:
        store.add(_spec("flaky", pause_after_failures=2), store.now())
        _fire_once(store, "flaky", FAILED)
        assert store.get("flaky").failures == 1 and store.get("flaky").spec.enabled
        _fire_once(store, "flaky", OK)  # a success starts the count again
        assert store.get("flaky").failures == 0
        _fire_once(store, "flaky", FAILED)
        _fire_once(store, "flaky", FAILED)
        paused = store.get("flaky")
        assert paused.failures == 2 and not paused.spec.enabled and paused.next_fire is None
        assert paused.pause is not None
        assert (paused.pause.note, paused.pause.by, paused.pause.until) == (failures_note(2), PAUSED_BY_TICKWORK, None)
        assert store.claim_due("n1", limit=10, buckets=None) == []
        assert store.set_enabled("flaky", True, store.now()).failures == 0

    def test_failures_are_not_counted_without_pause_after_failures(self, store: Store) -> None:
        store.add(_spec("plain"), store.now())
        for _ in range(3):
            _fire_once(store, "plain", FAILED)
        assert store.get("plain").failures == 0 and store.get("plain").spec.enabled

    def test_max_runs_ends_a_schedule_after_that_many_fires_that_ran(self, store: Store) -> None:
        store.add(_spec("thrice", max_runs=3), store.now())
        store.add(_spec("once", max_runs=1, on_finish="remove"), None)
        _fire_once(store, "thrice", OK)
        _fire_once(store, "thrice", FAILED)  # a failed fire ran: it counts
        assert store.get("thrice").run_count == 2 and store.get("thrice").next_fire is not None
        _fire_once(store, "thrice", OK)
        done = store.get("thrice")
        assert done.run_count == 3 and done.finished and done.next_fire is None
        assert len(store.history(schedule="thrice")) == 3  # kept, with its history
        _fire_once(store, "once", OK)
        assert [s.name for s in store.list_schedules()] == ["thrice"]  # removed once finished

    def test_backfilled_fires_run_once_each_unless_rerun(self, store: Store) -> None:
        store.add(_spec("bf", expression="0 * * * *"), None)
        start = store.now().replace(minute=0, second=0, microsecond=0) - timedelta(days=1)
        times = [start + timedelta(hours=h) for h in range(3)]
        # allow: taken side by side (the overlap part of the contract is .contract_backfill).
        assert store.queue_backfill("bf", times, overlap="allow") == times
        bucket = _spec("bf").bucket
        assert store.take_backfills("n2", limit=10, buckets=[(bucket + 1) % BUCKETS]) == []  # not n2's
        taken = store.take_backfills("n1", limit=2, buckets=[bucket])
        assert [(c.scheduled_for, c.attempt) for c in taken] == [(times[0], 1), (times[1], 1)]
        assert len({c.run_id for c in taken}) == 2 and all(c.run_id is not None for c in taken)
        for claim in taken:
            store.end_attempt(claim, OK)
        [last] = store.take_backfills("n1", limit=10, buckets=None)
        store.end_attempt(last, FAILED)
        assert store.take_backfills("n1", limit=10, buckets=None) == []
        history = {(r.scheduled_for, r.attempt): r.status for r in store.history(schedule="bf")}
        assert history == {
            (times[0], 1): RunStatus.SUCCEEDED,
            (times[1], 1): RunStatus.SUCCEEDED,
            (times[2], 1): RunStatus.FAILED,
        }
        # The same backfill again: every fire ran (the failed one too), nothing is queued.
        assert store.queue_backfill("bf", times) == []
        assert store.take_backfills("n1", limit=10, buckets=None) == []
        # With rerun, each runs again as its next attempt.
        assert store.queue_backfill("bf", times[:1], rerun=True) == times[:1]
        [again] = store.take_backfills("n1", limit=10, buckets=None)
        assert (again.scheduled_for, again.attempt) == (times[0], 2)

    def test_a_backfill_never_queues_a_fire_time_after_now(self, store: Store) -> None:
        # Never early (invariant 2) by the store's clock, whoever asks: nothing of the batch is
        # queued, and the message names the time.
        store.add(_spec("bf"), None)
        past, future = store.now() - MINUTE, store.now() + MINUTE
        with pytest.raises(ConfigError, match="after now"):
            store.queue_backfill("bf", [past, future])
        assert store.take_backfills("n1", limit=10, buckets=None) == []
        assert store.history(schedule="bf") == []

    def test_a_backfill_of_a_removed_schedule_is_dropped(self, store: Store) -> None:
        store.add(_spec("gone"), None)
        store.queue_backfill("gone", [store.now() - MINUTE])
        store.remove("gone")
        assert store.take_backfills("n1", limit=10, buckets=None) == []


__all__ = ["SemanticsContract"]
