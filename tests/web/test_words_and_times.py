"""The dashboard's wording of triggers and times (pure functions, no store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tickwork_web.auth import clean_name
from tickwork_web.timefmt import duration, relative, utc_text
from tickwork_web.words import describe

NOW = datetime(2026, 11, 24, 6, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kind", "expression", "words"),
    [
        ("cron", "* * * * *", "every minute"),
        ("cron", "*/15 * * * *", "every 15 minutes"),
        ("cron", "*/1 * * * *", "every 1 minute"),
        ("cron", "7 * * * *", "every hour at minute 7"),
        ("cron", "0 2 * * *", "every day at 02:00"),
        ("cron", "30 9 * * 1-5", "at 09:30 on weekdays"),
        ("cron", "0 10 * * 0,6", "at 10:00 on weekends"),
        ("cron", "0 8 * * 1", "at 08:00 on Mondays"),
        ("cron", "0 0 1 * *", "at 00:00 on day 1 of every month"),
        ("cron", "0 0 29 2 *", "cron 0 0 29 2 *"),  # no simple wording: shown as written
        ("cron", "0 9-17 * * *", "cron 0 9-17 * * *"),
        ("cron", "*/5 * * * * *", "cron */5 * * * * *"),
        ("interval", "90s", "every 90 seconds"),
        ("interval", "every 1h30m", "every 1 hour 30 minutes"),
        ("interval", "1d @ 2026-01-01T03:00Z", "every 1 day from 2026-01-01T03:00Z"),
        ("once", "2026-12-24T18:00Z", "once, at 2026-12-24T18:00Z"),
        ("calendar", "Mon..Fri 09:00", "calendar event Mon..Fri 09:00"),
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
