"""Behaviour of the calendar trigger beyond the golden corpus: API, errors, recognition, zones."""

from __future__ import annotations

import random
import zoneinfo
from datetime import UTC, datetime, timedelta

import pytest

from tickwork.errors import TriggerError
from tickwork.plugin.manager import PluginManager
from tickwork_calendar import CalendarTrigger
from tickwork_calendar import plugin as calendar_plugin
from tickwork_calendar.zones import load_zone, zone_name_is_valid


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_registers_as_calendar() -> None:
    manager = PluginManager(extra=[calendar_plugin], entry_points_enabled=False)
    assert manager.triggers.get("calendar") is CalendarTrigger
    assert CalendarTrigger.kind == "calendar"


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("25:00", "hour: value 25 is outside 0..23"),
        ("*-13-01", "month: value 13"),
        ("Mon..", "weekday range has no end"),
        ("Sun..Mon", "runs backwards"),
        ("*-*~29", "day counted from the month's end"),
        ("12:00 Europe/Nowhere", "unexpected ' '"),
        ("*:*:1.", "digits after the decimal point"),
        ("*:0/0", "repetition must not be 0"),
        ("1969-01-01", "year: value 1969 is outside 1970..2199"),
        ("", "empty"),
    ],
)
def test_errors_name_the_offending_part(expression: str, fragment: str) -> None:
    with pytest.raises(TriggerError) as caught:
        CalendarTrigger(expression)
    assert fragment in str(caught.value)
    assert repr(expression) in str(caught.value)


def test_bad_timezone_argument_is_a_trigger_error() -> None:
    with pytest.raises(TriggerError, match="unknown time zone 'Mars/Olympus'"):
        CalendarTrigger("daily", "Mars/Olympus")


def test_leap_second_zones_are_refused() -> None:
    if not zone_name_is_valid("right/UTC"):
        pytest.skip("no right/ zones installed")
    with pytest.raises(TriggerError, match="leap seconds"):
        CalendarTrigger("daily right/UTC")


def test_expression_zone_wins_over_argument() -> None:
    base = at("2026-01-05 00:00:00")
    suffixed = CalendarTrigger("*-*-* 09:00 Asia/Tokyo", "America/New_York")
    assert suffixed.zone_name == "Asia/Tokyo"
    assert suffixed.next_after(base) == at("2026-01-05 00:00:00") + timedelta(hours=24)
    local = CalendarTrigger("*-*-* 09:00", "America/New_York")
    assert local.next_after(base) == at("2026-01-05 14:00:00")
    assert CalendarTrigger("*-*-* 09:00 UTC", "Asia/Tokyo").next_after(base) == at("2026-01-05 09:00:00")


def test_next_after_is_utc_and_needs_an_aware_datetime() -> None:
    trigger = CalendarTrigger("hourly")
    tokyo = datetime(2026, 1, 1, 9, 30, tzinfo=zoneinfo.ZoneInfo("Asia/Tokyo"))
    result = trigger.next_after(tokyo)
    assert result == at("2026-01-01 01:00:00") and result is not None and result.tzinfo == UTC
    with pytest.raises(TriggerError, match="aware"):
        trigger.next_after(datetime(2026, 1, 1))


def test_strictly_after_even_on_a_match() -> None:
    trigger = CalendarTrigger("*-*-* 12:00:00")
    assert trigger.next_after(at("2026-01-01 12:00:00")) == at("2026-01-02 12:00:00")
    assert trigger.next_after(at("2026-01-01 11:59:59.999999")) == at("2026-01-01 12:00:00")


def test_spring_forward_skips_the_missing_time() -> None:
    trigger = CalendarTrigger("*-*-* 02:30 Europe/Berlin")
    fires = [trigger.next_after(at("2026-03-27 12:00:00"))]
    fires.append(trigger.next_after(fires[-1]))  # type: ignore[arg-type]
    # 2026-03-28 02:30 CET, then 2026-03-29 02:30 does not exist, then 2026-03-30 02:30 CEST.
    assert fires == [at("2026-03-28 01:30:00"), at("2026-03-30 00:30:00")]


def test_fall_back_fires_once_at_the_first_occurrence() -> None:
    trigger = CalendarTrigger("*-*-* 02:30 Europe/Berlin")
    first = trigger.next_after(at("2026-10-24 12:00:00"))
    assert first == at("2026-10-25 00:30:00")  # 02:30 CEST
    assert trigger.next_after(first) == at("2026-10-26 01:30:00")  # not again at 02:30 CET


def test_never_is_answered_at_once() -> None:
    assert CalendarTrigger("*-02-30").next_after(at("2026-01-01 00:00:00")) is None
    assert CalendarTrigger("2025-01-01").next_after(at("2026-01-01 00:00:00")) is None
    assert CalendarTrigger("daily").next_after(at("2199-12-31 00:00:00")) is None


@pytest.mark.parametrize(
    "expression",
    [
        "hourly",
        "Daily",
        "semi-annually",
        "Mon..Fri 09:00",
        "12:00",
        "*:0/15",
        "*-*-01",
        "2026-03-05",
        "Sat,Sun",
        "*-*-* 00:00:00",
        "Mon *-05~07/1",
        "@1700000000",
        "weekly Europe/Berlin",
        "*:00",
        "Monday 12:00 UTC",
    ],
)
def test_recognizes_calendar_events(expression: str) -> None:
    assert CalendarTrigger.recognizes(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "*/5 * * * *",
        "0 0 12 * * MON",
        "0 0 12 * * MON 2030",
        "@daily",
        "@hourly",
        "5m",
        "PT5M",
        "",
        "   ",
        "every 10 minutes",
        "0 9 * * 1-5",
    ],
)
def test_does_not_recognize_other_syntaxes(expression: str) -> None:
    assert not CalendarTrigger.recognizes(expression)


@pytest.mark.parametrize(
    "name",
    [
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
        "Europe/Dublin",
        "Africa/Casablanca",
        "America/Santiago",
        "Asia/Kolkata",
    ],
)
def test_zone_offsets_agree_with_zoneinfo(name: str) -> None:
    zone = load_zone(name)
    reference = zoneinfo.ZoneInfo(name)
    rng = random.Random(name)
    for _ in range(400):
        t = rng.randint(0, 4_102_444_800)  # 1970..2100
        expected = datetime.fromtimestamp(t, reference).utcoffset()
        assert expected is not None
        assert zone.offset(t) == int(expected.total_seconds()), t


def test_zone_names_follow_systemd_rules() -> None:
    assert zone_name_is_valid("UTC")
    assert zone_name_is_valid("Europe/Berlin")
    assert not zone_name_is_valid("Europe/../Europe/Berlin")
    assert not zone_name_is_valid("/usr/share/zoneinfo/UTC")
    assert not zone_name_is_valid("Europe//Berlin")
    assert not zone_name_is_valid("Europe")
    assert not zone_name_is_valid("zone.tab")
