"""The dashboard's wording of triggers and times (pure functions, no store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tickwork_web.auth import clean_name
from tickwork_web.timefmt import duration, is_utc, relative, utc_text, zone_text
from tickwork_web.words import describe

NOW = datetime(2026, 11, 24, 6, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kind", "expression", "words"),
    [
        ("cron", "* * * * *", "every minute"),
        ("cron", "*/15 * * * *", "every 15 minutes"),
        ("cron", "*/1 * * * *", "every minute"),
        ("cron", "7 * * * *", "every hour at minute 7"),
        ("cron", "0 2 * * *", "every day at 02:00"),
        ("cron", "30 9 * * 1-5", "at 09:30 on weekdays"),
        ("cron", "30 9 * * MON-FRI", "at 09:30 on weekdays"),
        ("cron", "0 10 * * 0,6", "at 10:00 on weekends"),
        ("cron", "0 8 * * 1", "at 08:00 on Mondays"),
        ("cron", "0 8 * * 7", "at 08:00 on Sundays"),
        ("cron", "0 12 * * 2-4", "at 12:00 on Tuesday through Thursday"),
        ("cron", "0 0 1 * *", "at 00:00 on day 1 of every month"),
        ("cron", "0 0 1,15 * *", "at 00:00 on days 1 and 15 of every month"),
        ("cron", "0 0 29 2 *", "at 00:00 on day 29 of February"),
        ("cron", "0 9-17 * * *", "every hour, 09:00 through 17:00"),
        ("cron", "0 9,12,17 * * *", "every day at 09:00, 12:00 and 17:00"),
        ("cron", "0 */2 * * *", "every 2 hours at minute 0"),
        ("cron", "*/15 9-17 * * 1-5", "every 15 minutes, 09:00 through 17:45 on weekdays"),
        ("cron", "@weekly", "at 00:00 on Sundays"),
        ("cron", "@hourly", "every hour at minute 0"),
        # 6 fields: seconds first
        ("cron", "*/5 * * * * *", "every 5 seconds"),
        ("cron", "* * * * * *", "every second"),
        ("cron", "30 0 3 * * *", "every day at 03:00:30"),
        ("cron", "0 30 9 * * 1-5", "at 09:30 on weekdays"),
        ("cron", "15 * * * * *", "every minute at second 15"),
        # no short wording that is surely right: shown as written
        ("cron", "0 0 1 * 1", "cron 0 0 1 * 1"),  # day-of-month OR day-of-week
        ("cron", "0 0 0 1 1 * 2030", "cron 0 0 0 1 1 * 2030"),  # a year
        ("cron", "7,8,19 3,5 * * *", "cron 7,8,19 3,5 * * *"),
        ("cron", "not cron", "cron not cron"),
        # systemd calendar events
        ("calendar", "Mon..Fri 09:00", "at 09:00 on weekdays"),
        ("calendar", "Sat,Sun 10:00", "at 10:00 on weekends"),
        ("calendar", "daily", "every day at 00:00"),
        ("calendar", "weekly", "at 00:00 on Mondays"),
        ("calendar", "*:0/15", "every 15 minutes"),
        ("calendar", "*:*:0/10", "every 10 seconds"),
        ("calendar", "minutely", "every minute"),
        ("calendar", "*-*-01 00:00", "at 00:00 on day 1 of every month"),
        ("calendar", "*-12-25 08:00:00", "at 08:00 on day 25 of December"),
        ("calendar", "quarterly", "at 00:00 on day 1 of January, April, July and October"),
        ("calendar", "9..17:00", "every hour, 09:00 through 17:00"),
        ("calendar", "Mon *-*-* 08:00 Europe/Oslo", "at 08:00 on Mondays (Europe/Oslo)"),
        ("calendar", "*-*-* 02:30 UTC", "every day at 02:30 (UTC)"),
        ("calendar", "*-*~01", "calendar *-*~01"),  # the last day of the month
        ("calendar", "2027-*-* 00:00", "calendar 2027-*-* 00:00"),
        ("calendar", "*:*:0.5", "calendar *:*:0.5"),
        ("calendar", "*:*:10..20", "calendar *:*:10..20"),  # seconds 10 to 20: no short wording
        ("calendar", "*:*:00..59/15", "every 15 seconds"),
        # one weekday within one week of the month (systemd ANDs them): what the Celery import writes
        ("calendar", "Fri *-*-01..07 09:00:00", "first Friday of the month at 09:00"),
        ("calendar", "Mon *-*-08..14 08:30", "second Monday of the month at 08:30"),
        ("calendar", "Tue *-*-22..28 18:00", "fourth Tuesday of the month at 18:00"),
        ("calendar", "Fri *-01,07-01..07 09:00", "first Friday of January and July at 09:00"),
        ("calendar", "Fri *-*-01..07 *:0/15", "every 15 minutes on the first Friday of the month"),
        ("calendar", "Fri *-*-02..08 09:00", "calendar Fri *-*-02..08 09:00"),  # not a week of the month
        ("calendar", "Mon,Fri *-*-01..07 09:00", "calendar Mon,Fri *-*-01..07 09:00"),
        ("cron", "0 9 1-7 * 5", "cron 0 9 1-7 * 5"),  # cron ORs them: every Friday and days 1-7
        ("interval", "90s", "every 90 seconds"),
        ("interval", "every 1h30m", "every 1 hour 30 minutes"),
        ("interval", "1d @ 2026-01-01T03:00Z", "every 1 day from 2026-01-01T03:00Z"),
        ("once", "2026-12-24T18:00Z", "once, at 2026-12-24T18:00Z"),
        ("custom", "whatever", "custom whatever"),
    ],
)
def test_trigger_in_words(kind: str, expression: str, words: str) -> None:
    assert describe(kind, expression) == words


@pytest.mark.parametrize(
    ("offset", "text"),
    [
        (timedelta(minutes=3), "in 3 min"),
        (timedelta(seconds=-45), "45 s ago"),
        (timedelta(hours=-2), "2 h ago"),
        (timedelta(days=3), "in 3 d"),
        (timedelta(milliseconds=300), "now"),
    ],
)
def test_relative_times(offset: timedelta, text: str) -> None:
    assert relative(NOW + offset, NOW) == text


def test_utc_text_and_durations() -> None:
    oslo = NOW.astimezone(ZoneInfo("Europe/Oslo"))
    assert utc_text(oslo) == "2026-11-24 06:30:00Z" and utc_text(None) == "-"
    assert duration(NOW, NOW + timedelta(seconds=1.5), NOW) == "1.50 s"
    assert duration(NOW, NOW + timedelta(minutes=5), NOW) == "5 min"
    assert duration(NOW - timedelta(seconds=20), None, NOW) == "20 s"  # still running
    assert duration(None, None, NOW) == "-"


def test_names_in_the_action_log_are_one_line() -> None:
    assert clean_name("  alice\nforged line\t ") == "alice forged line"
    assert clean_name("x" * 100) == "x" * 40


def test_times_in_a_schedule_zone() -> None:
    winter = datetime(2026, 11, 24, 2, 30, tzinfo=UTC)
    summer = datetime(2026, 7, 1, 2, 30, tzinfo=UTC)
    assert zone_text(winter, "Europe/Oslo") == "2026-11-24 03:30:00 CET"
    assert zone_text(summer, "Europe/Oslo") == "2026-07-01 04:30:00 CEST"
    assert zone_text(winter, "America/New_York") == "2026-11-23 21:30:00 EST"
    assert zone_text(winter, "Asia/Dubai") == "2026-11-24 06:30:00 UTC+04:00"  # no abbreviation
    assert zone_text(winter, "Not/AZone") == "2026-11-24 02:30:00Z"
    assert zone_text(None, "Europe/Oslo") == "-"
    assert is_utc("UTC") and is_utc("Etc/UTC") and not is_utc("Europe/Oslo")
