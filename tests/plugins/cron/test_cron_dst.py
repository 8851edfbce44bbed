"""DST behaviour of the cron trigger in concrete zones.

Rule under test (docs/triggers.md): with an hour field matching every hour the schedule follows the
clock (skipped wall times do not fire, repeated ones fire at both occurrences); otherwise a skipped
wall time fires once at the first instant after the gap and a repeated one fires once, the first time.

Transitions used (2026): Europe/Berlin 03-29 01:00Z (02:00->03:00) and 10-25 01:00Z (03:00->02:00);
America/New_York 03-08 07:00Z and 11-01 06:00Z; Australia/Lord_Howe 10-03 15:30Z (02:00->02:30,
+10:30->+11) and 04-04 15:00Z (02:00->01:30).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tickwork_cron import CronTrigger


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


def series(expression: str, zone: str, after: datetime, until: datetime) -> list[datetime]:
    trigger = CronTrigger(expression, zone)
    out: list[datetime] = []
    current = trigger.next_after(after)
    while current is not None and current <= until:
        out.append(current)
        current = trigger.next_after(current)
    return out


def hhmm(*times: tuple[int, int, int, int]) -> list[datetime]:
    """(month, day, hour, minute) tuples in 2026, UTC."""
    return [utc(2026, mo, d, h, mi) for mo, d, h, mi in times]


class TestSpringForward:
    def test_fixed_time_in_the_gap_fires_at_the_end_of_the_gap(self) -> None:
        got = series("30 2 * * *", "Europe/Berlin", utc(2026, 3, 27, 12), utc(2026, 3, 30, 12))
        # 03-28 02:30 CET, 03-29 03:00 CEST (gap end), 03-30 02:30 CEST
        assert got == hhmm((3, 28, 1, 30), (3, 29, 1, 0), (3, 30, 0, 30))

    def test_several_fixed_times_in_the_gap_fire_once(self) -> None:
        got = series("*/15 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12), utc(2026, 3, 30, 12))
        assert got == hhmm((3, 29, 1, 0), (3, 30, 0, 0), (3, 30, 0, 15), (3, 30, 0, 30), (3, 30, 0, 45))

    def test_hourly_skips_the_missing_hour(self) -> None:
        got = series("0 * * * *", "Europe/Berlin", utc(2026, 3, 28, 23, 30), utc(2026, 3, 29, 2))
        # 01:00 CET, (02:00 does not exist), 03:00 CEST, 04:00 CEST
        assert got == hhmm((3, 29, 0, 0), (3, 29, 1, 0), (3, 29, 2, 0))

    def test_every_ten_minutes_follows_the_clock(self) -> None:
        got = series("*/20 * * * *", "Europe/Berlin", utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 30))
        assert got == hhmm((3, 29, 0, 40), (3, 29, 1, 0), (3, 29, 1, 20))

    def test_new_york(self) -> None:
        got = series("30 2 * * *", "America/New_York", utc(2026, 3, 7, 12), utc(2026, 3, 9, 12))
        assert got == hhmm((3, 8, 7, 0), (3, 9, 6, 30))  # 03:00 EDT on the day, 02:30 EDT after

    def test_lord_howe_half_hour_gap(self) -> None:
        start, end = utc(2026, 10, 2, 12), utc(2026, 10, 4, 12)
        # 02:00 +10:30 normally; on 10-04 02:00 does not exist: fires at 02:30 +11 (the gap end).
        assert series("0 2 * * *", "Australia/Lord_Howe", start, end) == hhmm((10, 2, 15, 30), (10, 3, 15, 30))
        assert series("15 2 * * *", "Australia/Lord_Howe", start, end) == hhmm((10, 2, 15, 45), (10, 3, 15, 30))
        assert series("45 2 * * *", "Australia/Lord_Howe", start, end) == hhmm((10, 2, 16, 15), (10, 3, 15, 45))

    def test_lord_howe_clock_following(self) -> None:
        got = series("*/20 * * * *", "Australia/Lord_Howe", utc(2026, 10, 3, 15), utc(2026, 10, 3, 16))
        # 01:40 +10:30 = 15:10Z; 02:00 and 02:20 do not exist; 02:40 +11 = 15:40Z; 03:00 +11 = 16:00Z
        assert got == hhmm((10, 3, 15, 10), (10, 3, 15, 40), (10, 3, 16, 0))

    def test_second_level_schedule_skips_the_gap_quickly(self) -> None:
        trigger = CronTrigger("* * * * * *", "Europe/Berlin")
        assert trigger.next_after(utc(2026, 3, 29, 0, 59, 59)) == utc(2026, 3, 29, 1)


class TestFallBack:
    def test_fixed_time_in_the_repeat_fires_once(self) -> None:
        got = series("30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12), utc(2026, 10, 26, 12))
        assert got == hhmm((10, 25, 0, 30), (10, 26, 1, 30))  # 02:30 CEST (first), next day 02:30 CET

    def test_fixed_hour_fires_only_in_the_first_pass(self) -> None:
        got = series("*/20 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 23), utc(2026, 10, 25, 23))
        assert got == hhmm((10, 25, 0, 0), (10, 25, 0, 20), (10, 25, 0, 40))

    def test_hourly_fires_every_real_hour(self) -> None:
        got = series("0 * * * *", "Europe/Berlin", utc(2026, 10, 24, 22, 30), utc(2026, 10, 25, 2))
        # 01:00 CEST, 02:00 CEST, 02:00 CET, 03:00 CET
        assert got == hhmm((10, 24, 23, 0), (10, 25, 0, 0), (10, 25, 1, 0), (10, 25, 2, 0))

    def test_every_half_hour_fires_in_both_passes(self) -> None:
        got = series("*/30 * * * *", "Europe/Berlin", utc(2026, 10, 24, 23, 50), utc(2026, 10, 25, 2))
        assert got == hhmm((10, 25, 0, 0), (10, 25, 0, 30), (10, 25, 1, 0), (10, 25, 1, 30), (10, 25, 2, 0))

    def test_new_york(self) -> None:
        start, end = utc(2026, 10, 31, 12), utc(2026, 11, 1, 12)
        assert series("30 1 * * *", "America/New_York", start, end) == hhmm((11, 1, 5, 30))
        assert series("30 * * * *", "America/New_York", utc(2026, 11, 1, 4, 45), utc(2026, 11, 1, 7, 45)) == hhmm(
            (11, 1, 5, 30), (11, 1, 6, 30), (11, 1, 7, 30)
        )

    def test_lord_howe_half_hour_repeat(self) -> None:
        start, end = utc(2026, 4, 4, 14), utc(2026, 4, 4, 17)
        # 01:30-02:00 repeats: 01:45 +11 = 14:45Z, 01:45 +10:30 = 15:15Z, 02:45 +10:30 = 16:15Z
        assert series("45 1 * * *", "Australia/Lord_Howe", start, end) == hhmm((4, 4, 14, 45))
        assert series("45 * * * *", "Australia/Lord_Howe", start, end) == hhmm(
            (4, 4, 14, 45), (4, 4, 15, 15), (4, 4, 16, 15)
        )

    @pytest.mark.parametrize(
        ("expression", "after", "expected"),
        [
            # after = 02:30 CEST (first pass)
            ("0 * * * *", utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1)),
            ("*/15 2 * * *", utc(2026, 10, 25, 0, 50), utc(2026, 10, 26, 1)),
            ("45 2 * * *", utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 0, 45)),
            # after = 02:10 CET (second pass)
            ("*/15 2 * * *", utc(2026, 10, 25, 1, 10), utc(2026, 10, 26, 1)),
            ("*/15 * * * *", utc(2026, 10, 25, 1, 10), utc(2026, 10, 25, 1, 15)),
            ("5 * * * *", utc(2026, 10, 25, 1, 10), utc(2026, 10, 25, 2, 5)),
            ("0 3 * * *", utc(2026, 10, 25, 1, 10), utc(2026, 10, 25, 2)),
        ],
    )
    def test_starting_inside_the_repeat(self, expression: str, after: datetime, expected: datetime) -> None:
        assert CronTrigger(expression, "Europe/Berlin").next_after(after) == expected

    def test_after_given_in_a_local_zone(self) -> None:
        second_pass = datetime(2026, 10, 25, 2, 10, tzinfo=timezone(timedelta(hours=1)))  # 01:10Z
        assert CronTrigger("*/15 * * * *", "Europe/Berlin").next_after(second_pass) == utc(2026, 10, 25, 1, 15)
