"""Schedule semantics, the pure planning against hand-computed times (DST days in Europe/Berlin)
and the harness (MemoryStore, fake clock): jitter, start/end bounds, per-schedule misfire grace,
max_catchup, pauses with an end and pause_after_failures."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import tickwork
from tickwork.engine.planning import grace_of, plan_next_fire
from tickwork.errors import ConfigError, TriggerError
from tickwork.scheduling import sync
from tickwork.scheduling.firetimes import FireTimes, check_merged_period, fire_times, jitter_offset
from tickwork.scheduling.triggers import get_trigger
from tickwork.structures import MisfirePolicy, Pause, RunStatus, ScheduleSpec, failures_note
from tickwork.testing import SchedulerHarness

BERLIN_9AM = ("cron", "0 9 * * *", "Europe/Berlin")


def z(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def spec(name: str = "job", expression: str = "* * * * *", tz: str = "UTC", **fields: Any) -> ScheduleSpec:
    return ScheduleSpec(name, "cron", expression, "tests.support.jobs_for_tests:record", timezone=tz, **fields)


def times(spec_: ScheduleSpec, after: datetime, n: int) -> list[datetime]:
    fires = fire_times(spec_)
    out: list[datetime] = []
    current: datetime | None = after
    while len(out) < n:
        current = fires.next_after(current) if current is not None else None
        if current is None:
            break
        out.append(current)
    return out


# -- jitter -----------------------------------------------------------------------------------------


def test_the_jitter_offset_is_fixed_per_name_and_within_the_jitter() -> None:
    jitter = timedelta(seconds=10)
    offsets = [jitter_offset(f"job-{i}", jitter) for i in range(200)]
    assert offsets == [jitter_offset(f"job-{i}", jitter) for i in range(200)]  # the same every time
    assert all(timedelta(0) <= o < jitter for o in offsets)
    # Spread over the whole window: every second of it holds some of the 200 offsets.
    assert {int(o.total_seconds()) for o in offsets} == set(range(10))
    assert jitter_offset("job-1", timedelta(0)) == timedelta(0)


def test_jitter_moves_every_fire_by_the_offset_across_the_dst_change() -> None:
    jittered = spec("report", "0 9 * * *", "Europe/Berlin", jitter=timedelta(minutes=10))
    offset = jitter_offset("report", timedelta(minutes=10))
    # 09:00 in Berlin: 08:00Z in winter time (CET), 07:00Z from 29 March 2026 (CEST).
    nominal = [z("2026-03-28T08:00:00Z"), z("2026-03-29T07:00:00Z"), z("2026-03-30T07:00:00Z")]
    assert times(jittered, z("2026-03-27T12:00:00Z"), 3) == [t + offset for t in nominal]
    # Asked from between a nominal time and its moved time, the moved one is next.
    assert fire_times(jittered).next_after(nominal[1]) == nominal[1] + offset
    assert fire_times(jittered).next_after(nominal[1] + offset) == nominal[2] + offset


def test_a_schedule_without_the_options_gets_its_trigger_itself() -> None:
    assert fire_times(spec("plain")) is get_trigger("cron", "* * * * *", "UTC")
    assert isinstance(fire_times(spec("moved", jitter=timedelta(seconds=1))), FireTimes)


# -- bounds -----------------------------------------------------------------------------------------


def test_start_and_end_bound_the_fires_inclusive_over_the_dst_change() -> None:
    bounded = spec(
        "bounded", "0 9 * * *", "Europe/Berlin", start_at=z("2026-03-29T07:00:00Z"), end_at=z("2026-03-30T07:00:00Z")
    )
    assert times(bounded, z("2026-03-01T00:00:00Z"), 5) == [z("2026-03-29T07:00:00Z"), z("2026-03-30T07:00:00Z")]
    assert fire_times(bounded).next_after(z("2026-03-30T07:00:00Z")) is None


def test_bounds_apply_to_the_jittered_times() -> None:
    jitter = timedelta(minutes=30)
    offset = jitter_offset("late", jitter)
    assert offset > timedelta(0)
    # start_at just after 08:00Z (28 March) + offset: that fire is out, the next one (07:00Z) in.
    late = spec(
        "late",
        "0 9 * * *",
        "Europe/Berlin",
        jitter=jitter,
        start_at=z("2026-03-28T08:00:00Z") + offset + timedelta(microseconds=1),
        end_at=z("2026-03-29T07:00:00Z") + offset,
    )
    assert times(late, z("2026-03-01T00:00:00Z"), 3) == [z("2026-03-29T07:00:00Z") + offset]


def test_end_before_start_is_refused() -> None:
    with pytest.raises(ValueError, match="end_at: must not be before start_at"):
        spec(start_at=z("2026-03-02T00:00:00Z"), end_at=z("2026-03-01T00:00:00Z"))


# -- catch-up ---------------------------------------------------------------------------------------


def hourly(after: datetime) -> datetime | None:
    return get_trigger("cron", "0 * * * *", "UTC").next_after(after)


def test_max_catchup_replays_only_the_latest_missed_fires() -> None:
    # Down from 00:00 to 05:30: fires 01:00..05:00 were missed; all within the 6 h grace.
    plan = plan_next_fire(
        hourly,
        scheduled_for=z("2026-01-01T00:00:00Z"),
        claimed_at=z("2026-01-01T00:00:00Z"),
        now=z("2026-01-01T05:30:00Z"),
        policy=MisfirePolicy.ALL,
        grace=6 * 3600,
        max_catchup=2,
    )
    assert plan.next_fire == z("2026-01-01T04:00:00Z")  # 04:00 and 05:00 are replayed
    assert [t for t, _ in plan.skipped] == [
        z("2026-01-01T01:00:00Z"),
        z("2026-01-01T02:00:00Z"),
        z("2026-01-01T03:00:00Z"),
    ]
    assert all("max_catchup 2" in reason for _, reason in plan.skipped)
    uncapped = plan_next_fire(
        hourly,
        scheduled_for=z("2026-01-01T00:00:00Z"),
        claimed_at=z("2026-01-01T00:00:00Z"),
        now=z("2026-01-01T05:30:00Z"),
        policy=MisfirePolicy.ALL,
        grace=6 * 3600,
    )
    assert uncapped.next_fire == z("2026-01-01T01:00:00Z") and uncapped.skipped == ()


def test_max_catchup_zero_replays_none_and_other_policies_ignore_it() -> None:
    zero = plan_next_fire(
        hourly,
        scheduled_for=z("2026-01-01T00:00:00Z"),
        claimed_at=z("2026-01-01T00:00:00Z"),
        now=z("2026-01-01T02:30:00Z"),
        policy=MisfirePolicy.ALL,
        grace=6 * 3600,
        max_catchup=0,
    )
    assert zero.next_fire == z("2026-01-01T03:00:00Z")
    assert [t for t, _ in zero.skipped] == [z("2026-01-01T01:00:00Z"), z("2026-01-01T02:00:00Z")]
    skip = plan_next_fire(
        hourly,
        scheduled_for=z("2026-01-01T00:00:00Z"),
        claimed_at=z("2026-01-01T00:00:00Z"),
        now=z("2026-01-01T02:30:00Z"),
        policy=MisfirePolicy.SKIP,
        grace=6 * 3600,
        max_catchup=5,
    )
    assert skip.next_fire == z("2026-01-01T03:00:00Z") and len(skip.skipped) == 2


def test_a_schedules_own_misfire_grace_wins_over_the_nodes() -> None:
    assert grace_of(spec(), 30.0) == 30.0
    assert grace_of(spec(misfire_grace=timedelta(minutes=5)), 30.0) == 300.0
    assert grace_of(spec(misfire_grace=timedelta(0)), 30.0) == 0.0


# -- the harness: pauses ----------------------------------------------------------------------------

START = z("2026-01-01T00:00:00Z")


def test_the_harness_resumes_a_pause_when_its_end_passes() -> None:
    harness = SchedulerHarness([spec("tick", "* * * * *")], start=START)
    harness.store.set_enabled("tick", False, None, Pause("maintenance", until=START + timedelta(minutes=5, seconds=30)))
    ran = harness.advance(10 * 60)
    # Nothing while paused; from the first fire after the pause's end (00:05:30) on, every minute.
    assert [r.scheduled_for for r in ran] == [START + timedelta(minutes=m) for m in range(6, 11)]
    assert harness.store.get("tick").pause is None


def test_the_harness_pauses_a_schedule_after_its_failures() -> None:
    flaky = spec("flaky", "* * * * *", pause_after_failures=3)
    flaky = ScheduleSpec(**{**flaky.__dict__, "target": "tests.support.jobs_for_tests:boom"})
    harness = SchedulerHarness([flaky], start=START)
    ran = harness.advance(10 * 60)
    assert [r.status for r in ran] == [RunStatus.FAILED] * 3
    stored = harness.store.get("flaky")
    assert not stored.spec.enabled and stored.pause is not None and stored.pause.note == failures_note(3)


# -- several expressions and exclusions -------------------------------------------------------------


def test_several_expressions_fire_at_any_of_them_once_per_time() -> None:
    both = spec("both", "0 9 * * *", "Europe/Berlin", also=("0 9 * * 1-5", "30 17 * * *"))
    # 09:00 from both expressions on a weekday is one fire; 17:30 Berlin is 16:30Z (CET).
    assert times(both, z("2026-12-21T00:00:00Z"), 4) == [
        z("2026-12-21T08:00:00Z"),
        z("2026-12-21T16:30:00Z"),
        z("2026-12-22T08:00:00Z"),
        z("2026-12-22T16:30:00Z"),
    ]


def test_expressions_firing_together_less_than_a_second_apart_are_refused() -> None:
    # Every second, and once at 00:00:10.5: 10.0, 10.5 and 11.0 are half a second apart.
    busy = fire_times(spec("busy", "* * * * * *", also=("2026-01-01T00:00:10.5Z",)))
    assert isinstance(busy, FireTimes)
    with pytest.raises(TriggerError, match="together fire less than 1 s apart"):
        check_merged_period(busy, z("2026-01-01T00:00:00Z"))
    # Even minutes and odd minutes: every minute, which is fine.
    fine = fire_times(spec("fine", "*/2 * * * *", also=("1-59/2 * * * *",)))
    assert isinstance(fine, FireTimes)
    check_merged_period(fine, START)


def test_exclusions_without_a_time_exclude_whole_local_days() -> None:
    office = spec("office", "0 9 * * *", "Europe/Berlin", also=("30 17 * * *",), exclude=("Sat,Sun", "*-12-25"))
    # 25 December 2026 is a Friday, 26 and 27 the weekend: the next fire after the 24th is the 28th.
    assert times(office, z("2026-12-24T12:00:00Z"), 3) == [
        z("2026-12-24T16:30:00Z"),
        z("2026-12-28T08:00:00Z"),
        z("2026-12-28T16:30:00Z"),
    ]


def test_an_excluded_day_is_the_local_day_on_the_25_hour_dst_day() -> None:
    hourly_berlin = spec("hourly", "0 * * * *", "Europe/Berlin", exclude=("Sun",))
    # Sunday 25 October 2026 in Berlin runs from 22:00Z on the 24th (00:00 CEST) to 23:00Z on the
    # 25th (00:00 CET): 25 hours, none of which fires.
    assert times(hourly_berlin, z("2026-10-24T20:30:00Z"), 3) == [
        z("2026-10-24T21:00:00Z"),
        z("2026-10-25T23:00:00Z"),
        z("2026-10-26T00:00:00Z"),
    ]


def test_a_cron_exclusion_excludes_the_minutes_it_matches() -> None:
    lunch = spec("lunch", "*/30 * * * *", exclude=("* 12 * * *",))
    assert times(lunch, z("2026-05-04T11:00:00Z"), 3) == [
        z("2026-05-04T11:30:00Z"),
        z("2026-05-04T13:00:00Z"),
        z("2026-05-04T13:30:00Z"),
    ]


def test_exclusions_apply_before_the_jitter_and_never_count_as_missed() -> None:
    jitter = timedelta(minutes=20)
    offset = jitter_offset("weekdays", jitter)
    weekdays = spec("weekdays", "0 9 * * *", "Europe/Berlin", exclude=("Sat,Sun",), jitter=jitter)
    # Friday 27 March (CET) then Monday 30 March (CEST: the DST change fell on the excluded Sunday).
    assert times(weekdays, z("2026-03-27T00:00:00Z"), 2) == [
        z("2026-03-27T08:00:00Z") + offset,
        z("2026-03-30T07:00:00Z") + offset,
    ]
    # A node back on Monday after a weekend down: the weekend's times are no fires, so nothing skipped.
    plan = plan_next_fire(
        fire_times(weekdays).next_after,
        scheduled_for=z("2026-03-27T08:00:00Z") + offset,
        claimed_at=z("2026-03-27T08:00:00Z") + offset,
        now=z("2026-03-30T06:00:00Z"),
        policy=MisfirePolicy.SKIP,
        grace=30,
    )
    assert plan.next_fire == z("2026-03-30T07:00:00Z") + offset and plan.skipped == ()


def test_an_exclusion_must_be_a_calendar_or_cron_expression() -> None:
    with pytest.raises(TriggerError, match="exclude: '90s' is of kind interval; exclusions are calendar or cron"):
        fire_times(spec("odd", exclude=("90s",)))


def test_an_exclusion_that_matches_every_fire_is_refused() -> None:
    never = ScheduleSpec("never", "interval", "1h", "tests.support.jobs_for_tests:record", exclude=("* * * * *",))
    with pytest.raises(TriggerError, match="exclusions match more than 20,000 days or minutes in a row"):
        fire_times(never).next_after(z("2026-01-01T00:00:00Z"))


# -- max_runs ---------------------------------------------------------------------------------------


def test_the_harness_ends_a_schedule_after_max_runs_and_a_change_does_not_restart_it() -> None:
    harness = SchedulerHarness([spec("twice", "* * * * *", max_runs=2)], start=START)
    ran = harness.advance(10 * 60)
    assert [r.scheduled_for for r in ran] == [START + timedelta(minutes=1), START + timedelta(minutes=2)]
    done = harness.store.get("twice")
    assert done.finished and done.next_fire is None
    # A changed definition of a finished schedule gets no next fire; a higher max_runs does.
    assert sync.update(harness.store, replace(done.spec, retries=1), recompute=True).next_fire is None
    assert sync.set_enabled(harness.store, "twice", True).next_fire is None
    more = sync.update(harness.store, replace(done.spec, max_runs=3), recompute=True)
    assert more.next_fire == START + timedelta(minutes=11)
    assert len(harness.advance(10 * 60)) == 1


def test_on_finish_remove_removes_the_schedule_after_its_last_run() -> None:
    harness = SchedulerHarness([spec("one-off", "* * * * *", max_runs=1, on_finish="remove")], start=START)
    assert len(harness.advance(5 * 60)) == 1
    assert harness.store.list_schedules() == []


# -- through the admin API ----------------------------------------------------------------------------


def test_changing_the_fire_time_options_recomputes_the_next_fire(sqlite_project: Path) -> None:
    with tickwork.connect() as admin:
        plain = admin.add("every-minute", "* * * * *", "tests.support.jobs_for_tests:record")
        assert plain.next_fire is not None and plain.next_fire.second == 0
        moved = admin.update("every-minute", jitter="30s")
        offset = jitter_offset("every-minute", timedelta(seconds=30))
        assert moved.next_fire is not None
        assert (moved.next_fire - offset).second == 0 and (moved.next_fire - offset).microsecond == 0
        assert admin.next_fires("every-minute", 3) == [moved.next_fire + timedelta(minutes=m) for m in range(3)]
        paused = admin.pause("every-minute", "checking the jitter", until=timedelta(minutes=5), by="me")
        assert paused.pause is not None and not paused.enabled and paused.next_fire is None
        with pytest.raises(ConfigError, match="give a note"):
            admin.pause("every-minute", "  ")
        resumed = admin.resume("every-minute")
        assert resumed.enabled and resumed.pause is None and resumed.next_fire is not None


def test_the_harness_runs_backfilled_fires_once() -> None:
    harness = SchedulerHarness([spec("hourly", "0 * * * *", end_at=START)], start=START + timedelta(hours=1))
    times = [START - timedelta(hours=h) for h in (3, 2, 1)]
    assert harness.store.queue_backfill("hourly", times) == times
    ran = harness.advance(60)
    assert [(r.scheduled_for, r.status, r.attempt) for r in ran] == [(t, RunStatus.SUCCEEDED, 1) for t in times]
    assert harness.store.queue_backfill("hourly", times) == []
    assert harness.advance(60) == []


def test_admin_backfill_stores_its_overlap_and_the_harness_runs_buffer_all_in_order(sqlite_project: Path) -> None:
    with tickwork.connect() as admin:
        admin.add("hourly", "0 * * * *", "tests.support.jobs_for_tests:record")
        start = START - timedelta(days=1)
        end = start + timedelta(hours=3)
        with pytest.raises(ConfigError, match="buffer_all, allow"):
            admin.backfill("hourly", start, end, overlap="skip")
        assert admin.backfill("hourly", start, end, dry_run=True).overlap == "buffer_all"
        report = admin.backfill("hourly", start, end, overlap="allow")
        assert report.as_json()["overlap"] == "allow" and len(report.queued) == 3
    # The harness takes a buffer_all backfill one fire a pass, oldest first.
    harness = SchedulerHarness([spec("hourly", "0 * * * *", end_at=START)], start=START + timedelta(hours=1))
    times = [START - timedelta(hours=h) for h in (3, 2, 1)]
    assert harness.store.queue_backfill("hourly", list(reversed(times)), overlap="buffer_all") == times[::-1]
    assert [r.scheduled_for for r in harness.advance(60)] == times
