"""The part of :class:`~tickwork.testing.StoreContract` about a backfill's ``overlap``
(``tickwork jobs backfill --overlap``, docs/cluster.md#backfill): a ``buffer_all`` backfill is
taken one fire at a time, oldest first, each only once the schedule has no running run; an
``allow`` backfill up to the schedule's ``max_concurrent`` running runs, all at once when unset."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from ..abc import Store
from ..structures import Finish, Outcome, RunStatus, ScheduleSpec

OK = Outcome(RunStatus.SUCCEEDED)


def _hourly(store: Store, name: str, **fields: object) -> list[datetime]:
    """Add an hourly schedule ``name``; return yesterday's first four fire times of it."""
    values: dict[str, object] = {"name": name, "trigger_kind": "cron", "expression": "0 * * * *", "target": "m:f"}
    values.update(fields)
    store.add(ScheduleSpec(**values), None)  # type: ignore[arg-type]
    start = store.now().replace(minute=0, second=0, microsecond=0) - timedelta(days=1)
    return [start + timedelta(hours=h) for h in range(4)]


class BackfillOverlapContract:
    """Mixed into :class:`~tickwork.testing.StoreContract` (which provides the ``store`` fixture)."""

    def test_a_buffer_all_backfill_is_taken_one_fire_at_a_time_in_order(self, store: Store) -> None:
        times = _hourly(store, "buffered")
        assert store.queue_backfill("buffered", times) == times  # buffer_all is the default
        order: list[datetime] = []
        for _ in times:
            [claim] = store.take_backfills("n1", limit=10, buckets=None)
            # While it runs, no node takes the next one.
            assert store.take_backfills("n1", limit=10, buckets=None) == []
            assert store.take_backfills("n2", limit=10, buckets=None) == []
            order.append(claim.scheduled_for)
            store.end_attempt(claim, OK)
        assert order == times
        assert store.take_backfills("n1", limit=10, buckets=None) == []
        assert sorted(r.scheduled_for for r in store.history(schedule="buffered")) == times

    def test_a_buffer_all_backfill_waits_for_the_schedules_own_running_run(self, store: Store) -> None:
        times = _hourly(store, "busy")
        store.fire_now("busy")
        [own] = [c for c in store.claim_due("n1", limit=10, buckets=None) if c.spec.name == "busy"]
        store.queue_backfill("busy", times[:1], overlap="buffer_all")
        assert store.take_backfills("n1", limit=10, buckets=None) == []
        assert store.finish("n1", [Finish(own, OK, store.now() + timedelta(hours=1))]) == [True]
        [taken] = store.take_backfills("n1", limit=10, buckets=None)
        assert taken.scheduled_for == times[0]

    def test_a_schedule_whose_backfill_runs_does_not_use_up_the_limit(self, store: Store) -> None:
        """A node looks at the queue as each of its backfilled runs ends, often with room for
        one: the schedules whose buffered fire is running (their queued fires the earliest) must
        not take that room from one that may start now."""
        early = _hourly(store, "running-early")
        later = [t + timedelta(minutes=30) for t in _hourly(store, "waiting-later")]
        store.queue_backfill("running-early", early)
        store.queue_backfill("waiting-later", later)
        [first] = store.take_backfills("n1", limit=1, buckets=None)
        assert first.spec.name == "running-early"
        [second] = store.take_backfills("n1", limit=1, buckets=None)
        assert (second.spec.name, second.scheduled_for) == ("waiting-later", later[0])
        assert store.take_backfills("n1", limit=1, buckets=None) == []  # both running
        store.end_attempt(second, OK)
        [third] = store.take_backfills("n1", limit=1, buckets=None)
        assert (third.spec.name, third.scheduled_for) == ("waiting-later", later[1])

    def test_an_allow_backfill_is_taken_at_once_or_up_to_max_concurrent(self, store: Store) -> None:
        times = _hourly(store, "wide")
        assert store.queue_backfill("wide", times, overlap="allow") == times
        taken = store.take_backfills("n1", limit=10, buckets=None)
        assert [c.scheduled_for for c in taken] == times  # unbounded: all of them together

        bounded = _hourly(store, "bounded", overlap="allow", max_concurrent=2)
        store.queue_backfill("bounded", bounded, overlap="allow")
        first = store.take_backfills("n1", limit=10, buckets=None)
        assert [c.scheduled_for for c in first] == bounded[:2]
        assert store.take_backfills("n2", limit=10, buckets=None) == []  # two are running
        store.end_attempt(first[0], OK)
        [third] = store.take_backfills("n2", limit=10, buckets=None)
        assert third.scheduled_for == bounded[2]

    def test_a_take_writes_the_ends_it_carries_and_takes_the_slots_they_free(self, store: Store) -> None:
        """``take_backfills(ends=...)``: the ends of backfilled runs are written in the take's own
        transaction, as :meth:`Store.end_attempt` writes them, so a buffered fire's successor is
        taken by the call that ends it; ``limit`` 0 only writes them."""
        times = _hourly(store, "chain")
        store.queue_backfill("chain", times[:3])
        [first] = store.take_backfills("n1", limit=10, buckets=None)
        started = store.now() - timedelta(seconds=5)
        ended = Finish(first, OK, None, started_at=started)
        [second] = store.take_backfills("n1", limit=10, buckets=None, ends=[ended])
        assert second.scheduled_for == times[1]
        assert store.take_backfills("n2", limit=10, buckets=None) == []  # the second runs
        failed = Outcome(RunStatus.FAILED, error="boom")
        assert store.take_backfills("n1", limit=0, buckets=None, ends=[Finish(second, failed, None)]) == []
        # An end carried again for a run no longer running (ended, or recorded abandoned) changes nothing.
        [third] = store.take_backfills("n2", limit=10, buckets=None, ends=[Finish(first, failed, None)])
        assert third.scheduled_for == times[2]
        runs = {r.scheduled_for: r for r in store.history(schedule="chain")}
        assert (runs[times[0]].status, runs[times[0]].error) == (RunStatus.SUCCEEDED, None)
        assert runs[times[0]].started_at == started
        assert (runs[times[1]].status, runs[times[1]].error) == (RunStatus.FAILED, "boom")
        assert runs[times[2]].status is RunStatus.RUNNING
        successor_start, predecessor_end = runs[times[1]].started_at, runs[times[0]].finished_at
        assert successor_start is not None and predecessor_end is not None
        assert successor_start >= predecessor_end  # never before its predecessor's end

    def test_a_take_keeps_fire_time_order_across_a_schedules_mixed_backfills(self, store: Store) -> None:
        """Two backfills of one schedule, ``allow`` then ``buffer_all``: the allowed fires run
        together, the buffered one only once they all ended (alone), an allowed one after it beside
        it; the carried ends free the slots within the take."""
        times = _hourly(store, "mixed", overlap="allow", max_concurrent=2)
        store.queue_backfill("mixed", [*times[:2], times[3]], overlap="allow")
        store.queue_backfill("mixed", [times[2]], overlap="buffer_all")
        both = store.take_backfills("n1", limit=10, buckets=None)
        assert [c.scheduled_for for c in both] == times[:2]
        assert store.take_backfills("n1", limit=10, buckets=None) == []  # the buffered one waits
        # One end frees one slot, but the buffered fire (next in order) must run alone.
        assert store.take_backfills("n1", limit=10, buckets=None, ends=[Finish(both[0], OK, None)]) == []
        [alone] = store.take_backfills("n1", limit=10, buckets=None, ends=[Finish(both[1], OK, None)])
        assert (alone.scheduled_for, alone.backfill_overlap) == (times[2], "buffer_all")
        # An allowed fire after it runs beside it (one running, under max_concurrent 2).
        [last] = store.take_backfills("n2", limit=10, buckets=None)
        assert (last.scheduled_for, last.backfill_overlap) == (times[3], "allow")

    def test_an_unknown_backfill_overlap_is_refused(self, store: Store) -> None:
        times = _hourly(store, "odd")
        with pytest.raises(ValueError, match="buffer_all"):
            store.queue_backfill("odd", times, overlap="skip")
        assert store.take_backfills("n1", limit=10, buckets=None) == []

    def test_a_failed_backfilled_run_is_queued_again_as_its_next_attempt(self, store: Store) -> None:
        """:meth:`Store.retry_backfill` ends the failed run and queues its fire again in one step:
        taken like any queued time, first of its backfill, under the backfill's overlap."""
        times = _hourly(store, "flaky")
        store.queue_backfill("flaky", times[:2])
        [claim] = store.take_backfills("n1", limit=10, buckets=None)
        assert claim.backfill and claim.backfill_overlap == "buffer_all" and claim.attempt == 1
        failed = Outcome(RunStatus.FAILED, error="boom")
        assert store.retry_backfill(claim, failed)
        [retry] = store.take_backfills("n2", limit=10, buckets=None)  # alone: buffer_all
        assert (retry.scheduled_for, retry.attempt, retry.backfill_overlap) == (times[0], 2, "buffer_all")
        attempts = sorted(
            (r.attempt, r.status, r.error) for r in store.history(schedule="flaky") if r.scheduled_for == times[0]
        )
        assert attempts == [(1, RunStatus.FAILED, "boom"), (2, RunStatus.RUNNING, None)]
        # A run no longer running (ended, or recorded abandoned meanwhile) is not queued again.
        assert not store.retry_backfill(claim, failed)
        store.end_attempt(retry, OK)
        [following] = store.take_backfills("n1", limit=10, buckets=None)
        assert following.scheduled_for == times[1]
        store.end_attempt(following, OK)
        assert store.take_backfills("n1", limit=10, buckets=None) == []

    def test_the_last_run_stays_the_latest_fire_after_a_backfill_of_older_ones(self, store: Store) -> None:
        times = _hourly(store, "late")
        store.fire_now("late")
        [own] = [c for c in store.claim_due("n1", limit=10, buckets=None) if c.spec.name == "late"]
        failed = Outcome(RunStatus.FAILED, error="boom")
        assert store.finish("n1", [Finish(own, failed, store.now() + timedelta(hours=1))]) == [True]
        store.queue_backfill("late", times[:2], overlap="allow")
        for claim in store.take_backfills("n1", limit=10, buckets=None):
            store.end_attempt(claim, OK)  # older fires, recorded after the newer one
        schedule_id = store.get("late").id
        last = store.last_runs([schedule_id])[schedule_id]
        assert last.scheduled_for == own.scheduled_for and last.status is RunStatus.FAILED
        # The failing filter reads the same last run: the fire now failed, whatever ran after it.
        assert [s.name for s in store.find_schedules(failing=True)] == ["late"]
        assert store.find_schedules(failing=False) == []


__all__ = ["BackfillOverlapContract"]
