"""Fire times of the cron trigger: field forms, the day rule, leap years, never, and croniter agreement."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from tickwork.plugin.manager import PluginManager
from tickwork.scheduling.triggers import next_fire_times
from tickwork_cron import CronTrigger, plugin


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


def series(expression: str, after: datetime, n: int, zone: str = "UTC") -> list[datetime]:
    trigger = CronTrigger(expression, zone)
    out: list[datetime] = []
    current = after
    for _ in range(n):
        nxt = trigger.next_after(current)
        if nxt is None:
            break
        out.append(nxt)
        current = nxt
    return out


class TestBasics:
    def test_strictly_after(self) -> None:
        assert CronTrigger("*/5 * * * *").next_after(utc(2026, 1, 1, 0, 5)) == utc(2026, 1, 1, 0, 10)
        assert CronTrigger("*/5 * * * *").next_after(utc(2026, 1, 1, 0, 4, 59, 999999)) == utc(2026, 1, 1, 0, 5)

    def test_microseconds_are_past_the_second(self) -> None:
        every_second = CronTrigger("* * * * * *")
        assert every_second.next_after(utc(2026, 1, 1, 0, 0, 0, 1)) == utc(2026, 1, 1, 0, 0, 1)

    def test_returns_aware_utc_for_any_input_zone(self) -> None:
        after = datetime(2026, 1, 1, 10, 0, tzinfo=timezone(timedelta(hours=5)))  # 05:00Z
        result = CronTrigger("0 6 * * *").next_after(after)
        assert result == utc(2026, 1, 1, 6)
        assert result is not None and result.tzinfo is UTC

    def test_naive_after_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="timezone-aware"):
            CronTrigger("* * * * *").next_after(datetime(2026, 1, 1))

    def test_carries_across_year_end(self) -> None:
        assert series("59 23 31 12 *", utc(2026, 12, 31, 23, 59), 1) == [utc(2027, 12, 31, 23, 59)]
        assert series("* * * * * *", utc(2026, 12, 31, 23, 59, 59), 1) == [utc(2027, 1, 1)]

    def test_six_field_every_second(self) -> None:
        assert series("*/20 * * * * *", utc(2026, 1, 1, 0, 0, 30), 3) == [
            utc(2026, 1, 1, 0, 0, 40),
            utc(2026, 1, 1, 0, 1),
            utc(2026, 1, 1, 0, 1, 20),
        ]

    def test_weekdays_at_nine(self) -> None:
        # 2026-01-02 is a Friday.
        assert series("0 9 * * 1-5", utc(2026, 1, 2, 9), 2) == [utc(2026, 1, 5, 9), utc(2026, 1, 6, 9)]

    def test_names_fire_like_numbers(self) -> None:
        assert series("0 0 * FEB MON", utc(2026, 1, 1), 3) == series("0 0 * 2 1", utc(2026, 1, 1), 3)

    def test_evaluated_in_the_trigger_zone(self) -> None:
        assert CronTrigger("0 9 * * *", "Asia/Tokyo").next_after(utc(2025, 12, 31, 12)) == utc(2026, 1, 1, 0)
        assert CronTrigger("0 9 * * *", "Asia/Kolkata").next_after(utc(2026, 1, 1)) == utc(2026, 1, 1, 3, 30)

    def test_utc_aliases(self) -> None:
        for zone in ("UTC", "Etc/UTC", "Zulu"):
            assert CronTrigger("0 0 * * *", zone).next_after(utc(2026, 1, 1, 12)) == utc(2026, 1, 2)


class TestDayRule:
    """Vixie cron: both day fields restricted -> either fires; one is '*' -> only the other counts."""

    def test_both_restricted_fire_on_either(self) -> None:
        # The 13th, or any Friday: 2026-02-06 (Fri), 2026-02-13 (Fri and 13th), 2026-02-20 (Fri).
        got = series("0 0 13 * 5", utc(2026, 2, 1), 4)
        assert got == [utc(2026, 2, 6), utc(2026, 2, 13), utc(2026, 2, 20), utc(2026, 2, 27)]
        assert series("0 0 1 * 1", utc(2026, 2, 27), 2) == [utc(2026, 3, 1), utc(2026, 3, 2)]

    def test_only_weekday_counts_when_day_of_month_is_star(self) -> None:
        assert series("0 0 * * 5", utc(2026, 2, 1), 2) == [utc(2026, 2, 6), utc(2026, 2, 13)]

    def test_only_day_of_month_counts_when_weekday_is_star(self) -> None:
        assert series("0 0 13 * *", utc(2026, 2, 1), 2) == [utc(2026, 2, 13), utc(2026, 3, 13)]

    def test_a_star_step_restricts(self) -> None:
        # '*/10' is not '*': both fields are restricted, so the 1st/11th/21st/31st OR Mondays fire.
        got = series("0 0 */10 * 1", utc(2026, 2, 28), 4)
        assert got == [utc(2026, 3, 1), utc(2026, 3, 2), utc(2026, 3, 9), utc(2026, 3, 11)]

    def test_full_range_is_still_a_restriction(self) -> None:
        # '1-31' restricts, so the OR rule applies and every day fires.
        assert series("0 0 1-31 * 1", utc(2026, 2, 1), 2) == [utc(2026, 2, 2), utc(2026, 2, 3)]


class TestCalendarEdges:
    def test_leap_day(self) -> None:
        assert series("0 0 29 2 *", utc(2026, 1, 1), 3) == [utc(2028, 2, 29), utc(2032, 2, 29), utc(2036, 2, 29)]

    def test_leap_day_skips_2100(self) -> None:
        assert series("0 0 29 2 *", utc(2096, 3, 1), 1) == [utc(2104, 2, 29)]

    def test_thirty_first_only_in_long_months(self) -> None:
        got = series("0 0 31 * *", utc(2026, 1, 31), 3)
        assert got == [utc(2026, 3, 31), utc(2026, 5, 31), utc(2026, 7, 31)]

    @pytest.mark.parametrize("expression", ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 feb-apr/2 *"])
    def test_impossible_dates_never_fire(self, expression: str) -> None:
        assert CronTrigger(expression).next_after(utc(2026, 1, 1)) is None

    def test_impossible_date_is_still_reachable_through_the_weekday(self) -> None:
        # February has no 30th, but Mondays in February fire: 2026-02-02 is the first.
        assert CronTrigger("0 0 30 2 1").next_after(utc(2026, 1, 1)) == utc(2026, 2, 2)

    def test_years(self) -> None:
        got = series("0 0 12 1 1 * 2027,2029", utc(2026, 6, 1), 3)
        assert got == [utc(2027, 1, 1, 12), utc(2029, 1, 1, 12)]

    def test_year_in_the_past_never_fires(self) -> None:
        assert CronTrigger("0 0 0 1 1 * 2020").next_after(utc(2026, 1, 1)) is None

    def test_year_without_a_matching_day_never_fires(self) -> None:
        assert CronTrigger("0 0 0 29 2 * 2100").next_after(utc(2026, 1, 1)) is None

    def test_any_year_ends_at_the_datetime_limit(self) -> None:
        assert CronTrigger("0 0 1 1 *").next_after(utc(9999, 6, 1)) is None
        assert CronTrigger("0 0 1 1 *").next_after(utc(9998, 6, 1)) == utc(9999, 1, 1)

    def test_long_walks_stay_correct(self) -> None:
        # 70 years of monthly fires: more months than the trigger keeps cached at once.
        got = series("0 0 1 * *", utc(2026, 1, 1), 840)
        assert got == [utc(2026 + i // 12, i % 12 + 1, 1) for i in range(1, 841)]

    def test_before_1970_is_fine(self) -> None:
        assert CronTrigger("0 0 1 1 *").next_after(utc(1900, 6, 1)) == utc(1901, 1, 1)


class TestRegistration:
    def test_plugin_registers_cron(self) -> None:
        manager = PluginManager(entry_points_enabled=False, extra=[plugin])
        assert manager.triggers.get("cron") is CronTrigger

    def test_engine_helper_finds_cron_by_syntax(self) -> None:
        assert next_fire_times("0 12 * * *", after=utc(2026, 1, 1), n=2) == [utc(2026, 1, 1, 12), utc(2026, 1, 2, 12)]


# -- agreement with croniter ----------------------------------------------------------------------


def _random_field(rnd: random.Random, low: int, high: int) -> str:
    """A random field; ranges always have two distinct ends (croniter mis-reads 'a-a' as '*')."""
    kind = rnd.random()
    if kind < 0.3:
        return "*"
    if kind < 0.45:
        return f"*/{rnd.randint(1, (high - low) // 2 + 1)}"
    if kind < 0.7:
        a = rnd.randint(low, high - 1)
        b = rnd.randint(a + 1, high)
        return f"{a}-{b}" if rnd.random() < 0.5 else f"{a}-{b}/{rnd.randint(1, 5)}"
    return ",".join(str(rnd.randint(low, high)) for _ in range(rnd.randint(1, 3)))


def _day_rules_differ(expression: str) -> bool:
    """croniter turns a full-range day field into '*' when the other day field contains a '*'."""
    f = expression.split()
    dom, dow = f[-3], f[-1]
    trigger = CronTrigger(expression)
    return (len(trigger.fields.weekdays) == 7 and dow != "*" and "*" in dom) or (
        len(trigger.fields.days) == 31 and dom != "*" and "*" in dow
    )


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York"])
@pytest.mark.parametrize("with_seconds", [False, True])
def test_agrees_with_croniter(zone: str, with_seconds: bool) -> None:
    rnd = random.Random(f"{zone}{with_seconds}")
    checked = 0
    while checked < 150:
        parts = [
            _random_field(rnd, 0, 59),
            _random_field(rnd, 0, 23),
            _random_field(rnd, 1, 31),
            _random_field(rnd, 1, 12),
            _random_field(rnd, 0, 6),
        ]
        seconds = _random_field(rnd, 0, 59) if with_seconds else None
        ours = " ".join([seconds, *parts]) if seconds else " ".join(parts)
        theirs = " ".join([*parts, seconds]) if seconds else ours  # croniter puts seconds last
        trigger = CronTrigger(ours, zone)
        # Away from UTC, only clock-following schedules (hour '*') have one agreed DST answer.
        if _day_rules_differ(ours) or (zone != "UTC" and not trigger.fields.every_hour):
            continue
        checked += 1
        start = utc(2000, 1, 1) + timedelta(seconds=rnd.randint(0, 40 * 365 * 86400))
        reference = croniter(theirs, start.astimezone(ZoneInfo(zone)))
        current = start
        for _ in range(3):
            expected = reference.get_next(datetime).astimezone(UTC)
            got = trigger.next_after(current)
            assert got == expected, (ours, zone, current)
            current = expected


def test_agrees_with_croniter_on_names_and_words() -> None:
    start = utc(2026, 5, 17, 13, 14)
    for expression in ["0 9 * JAN-MAR MON-FRI", "15 */4 * * SAT,SUN", "0 0 1 jun,dec *", "@weekly", "@monthly"]:
        reference = croniter(expression, start)
        assert series(expression, start, 5) == [reference.get_next(datetime) for _ in range(5)], expression
