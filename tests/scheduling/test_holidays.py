"""Business-day calendars (issue #44, docs/holidays.md): the ``holidays`` and ``on_holiday``
options as ``tickwork next``, the fire-time computation, the history and the errors see them,
checked against the ``holidays`` package."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import holidays as package
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO
from tickwork.config.files import parse
from tickwork.errors import ConfigError
from tickwork.scheduling.firetimes import FireTimes, fire_times
from tickwork.structures import OnHoliday, RunStatus, ScheduleSpec
from tickwork.testing import SchedulerHarness

BERLIN = ZoneInfo("Europe/Berlin")
AFTER = datetime(2026, 4, 15, tzinfo=UTC)


def tw(*args: str) -> subprocess.CompletedProcess[str]:
    # Absolute: the command runs elsewhere (a directory without a tickwork.toml: the defaults).
    path = os.pathsep.join(str(REPO / p) for p in ("src", "plugins", "."))
    return run_tickwork(
        args,
        env={**{k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG"}, "PYTHONPATH": path},
        cwd=REPO / "docs",  # a directory without a tickwork.toml: the defaults
    )


def spec(expression: str, calendar: str | None, policy: str = "skip", zone: str = "Europe/Berlin") -> ScheduleSpec:
    return ScheduleSpec(
        name="payroll",
        trigger_kind="cron",
        expression=expression,
        target="tests.scheduling.test_holidays:job",
        timezone=zone,
        holidays=calendar,
        on_holiday=OnHoliday(policy),
    )


def job() -> None:
    """The harness's target."""


def times(s: ScheduleSpec, n: int, after: datetime = AFTER) -> list[datetime]:
    fires = fire_times(s)
    assert isinstance(fires, FireTimes)
    return [t.astimezone(BERLIN).replace(tzinfo=None) for t, _ in itertools.islice(fires.fires_after(after), n)]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("next", ["2026-05-04 09:00", "2026-06-01 09:00"]), ("skip", ["2026-06-01 09:00", "2026-07-01 09:00"])],
)
def test_the_issues_example_holds_on_the_command_line(policy: str, expected: list[str]) -> None:
    done = tw(
        "next",
        "0 9 1 * *",
        "--tz",
        "Europe/Berlin",
        "--after",
        "2026-04-15T00:00:00",
        "-n",
        "2",
        "--holidays",
        "DE-BE",
        "--on-holiday",
        policy,
    )
    assert done.returncode == 0, done.stderr
    assert [line[:16] for line in done.stdout.splitlines()] == expected
    if policy == "next":
        assert "Labor Day" in done.stderr  # why the first one moved


def test_previous_moves_labour_day_to_the_thursday() -> None:
    assert times(spec("0 9 1 * *", "DE-BE", "previous"), 2) == [datetime(2026, 4, 30, 9), datetime(2026, 6, 1, 9)]


def test_a_move_that_would_reach_the_next_regular_fire_is_dropped_and_says_why() -> None:
    # Daily at 09:00: Friday 1 May (holiday), Saturday and Sunday would all move to Monday 4 May,
    # which has its own fire: each is dropped, so Monday fires once.
    daily = spec("0 9 * * *", "DE-BE", "next")
    got = times(daily, 4, datetime(2026, 4, 29, tzinfo=UTC))
    assert got == [datetime(2026, 4, 29, 9), datetime(2026, 4, 30, 9), datetime(2026, 5, 4, 9), datetime(2026, 5, 5, 9)]
    fires = fire_times(daily)
    assert isinstance(fires, FireTimes)
    dropped = fires.dropped(datetime(2026, 4, 30, 7, tzinfo=UTC), datetime(2026, 5, 4, 7, tzinfo=UTC), 10)
    assert [t.astimezone(BERLIN).day for t, _ in dropped] == [1, 2, 3]
    assert "Labor Day" in dropped[0][1] and "next regular fire" in dropped[0][1]


def test_previous_never_puts_two_fires_on_one_day() -> None:
    # Mondays and Fridays at 09:00, moved back: Friday 1 May would land on Thursday 30 April,
    # after Monday 27 April: it moves. Easter Monday (6 April) would land on Friday 3 April, Good
    # Friday, then Thursday 2 April, which is after the fire of Friday 3 April's day? No: Good
    # Friday's own fire moves to Thursday 2 April, so Easter Monday's move is dropped.
    got = times(spec("0 9 * * 1,5", "DE-BE", "previous"), 4, datetime(2026, 3, 31, tzinfo=UTC))
    assert got == [
        datetime(2026, 4, 2, 9),
        datetime(2026, 4, 10, 9),
        datetime(2026, 4, 13, 9),
        datetime(2026, 4, 17, 9),
    ]
    assert len({t.date() for t in got}) == len(got)


def test_a_declared_calendar_adds_days_and_sets_the_week() -> None:
    with SchedulerHarness(
        calendars={"company": {"country": "DE", "subdiv": "BE", "extra": ["2026-12-24"], "workdays": "Mon..Thu"}}
    ):
        got = times(spec("0 9 * * *", "company"), 3, datetime(2026, 12, 23, tzinfo=UTC))
    # 24 Dec: extra; 25-26: Christmas; Friday 25 and Sunday 27 not workdays either.
    assert got == [datetime(2026, 12, 23, 9), datetime(2026, 12, 28, 9), datetime(2026, 12, 29, 9)]


def test_skipped_holiday_fires_are_history_rows_with_their_reason() -> None:
    with SchedulerHarness([spec("0 9 1 * *", "DE-BE")], start=datetime(2026, 3, 31, tzinfo=UTC)) as harness:
        harness.advance(100 * 86400)
        rows = harness.store.history(schedule="payroll", limit=20)
    by_time = {r.scheduled_for.astimezone(BERLIN).date(): r for r in rows}
    assert by_time[date(2026, 4, 1)].status is RunStatus.SUCCEEDED
    assert by_time[date(2026, 5, 1)].status is RunStatus.SKIPPED
    assert "Labor Day (DE-BE)" in (by_time[date(2026, 5, 1)].error or "")
    assert by_time[date(2026, 6, 1)].status is RunStatus.SUCCEEDED


def test_unknown_calendars_are_refused_naming_the_value() -> None:
    with pytest.raises(ConfigError, match="unknown country 'DX'"):
        fire_times(spec("0 9 1 * *", "DX"))
    with pytest.raises(
        ConfigError, match=r"unknown subdivision 'BX' of DE \(did you mean 'BB'\?\)|unknown subdivision 'BX'"
    ):
        fire_times(spec("0 9 1 * *", "DE-BX"))
    with pytest.raises(ConfigError, match="'germany' is neither a country calendar"):
        fire_times(spec("0 9 1 * *", "germany"))
    done = tw("next", "0 9 1 * *", "--holidays", "XY")
    assert done.returncode == 2 and "unknown country 'XY'" in done.stderr


def test_a_schedule_without_holidays_never_imports_the_package() -> None:
    code = (
        "import sys, tickwork\n"
        "from tickwork.scheduling.firetimes import fire_times\n"
        "from tickwork.structures import ScheduleSpec\n"
        "s = ScheduleSpec(name='a', trigger_kind='cron', expression='0 9 1 * *', target='m:f', exclude=('Sat,Sun',))\n"
        "fire_times(s).next_after(__import__('datetime').datetime(2026, 1, 1, tzinfo=__import__('datetime').UTC))\n"
        "assert 'holidays' not in sys.modules, 'imported'\n"
    )
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p)
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_a_missing_package_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['holidays'] = None\n"
        "from tickwork.config.calendars import calendar\n"
        "from tickwork.errors import ConfigError\n"
        "try:\n    calendar('DE')\nexcept ConfigError as e:\n    print(e)\n"
    )
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p)
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True
    )
    assert "pip install 'tickwork[holidays]'" in done.stdout, done.stderr


#: 30 countries whose calendars differ in weekend, holidays and substitutions.
COUNTRIES = (
    "DE", "US", "GB", "FR", "IT", "ES", "NL", "BE", "AT", "CH", "PL", "CZ", "SE", "NO", "DK",
    "FI", "IE", "PT", "JP", "CN", "IN", "BR", "MX", "CA", "AU", "NZ", "ZA", "IL", "AE", "KR",
)  # fmt: skip
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney")


@settings(max_examples=150, deadline=None)
@given(
    country=st.sampled_from(COUNTRIES),
    policy=st.sampled_from(["skip", "next", "previous"]),
    expression=st.sampled_from(["0 9 1 * *", "30 7 15 * *", "0 12 * * 1", "0 18 28 * *", "0 9 1,16 * *"]),
    zone=st.sampled_from(ZONES),
    start=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2035, 6, 1)),
)
def test_moves_agree_with_the_package(country: str, policy: str, expression: str, zone: str, start: datetime) -> None:
    """Across 30 countries and 10 years: a fire lands on a business day of the package; a moved
    one at the same local time, with no business day between its day and where it came from; a
    fire time of the trigger on a business day is never moved or dropped; one fire a day."""
    s = spec(expression, country, policy, zone)
    tz = ZoneInfo(zone)
    cal = package.country_holidays(country)
    fires = fire_times(s)
    assert isinstance(fires, FireTimes)
    after = start.replace(tzinfo=UTC)
    got = list(itertools.islice(fires.fires_after(after), 6))
    if not got:
        return
    plain = fire_times(spec(expression, None, zone=zone))
    end = got[-1][0]
    nominal = [t for t in _between(plain, after - timedelta(days=40), end + timedelta(days=40))]
    fired = {t for t, _ in got}
    days = [t.astimezone(tz).date() for t, _ in got]
    assert len(set(days)) == len(days)
    for moment, why in got:
        local = moment.astimezone(tz)
        assert cal.is_working_day(local.date()), (moment, why)
        if not why:
            assert moment in nominal
            continue
        assert policy != "skip"
        source = datetime.fromisoformat(why.split("moved from ")[1].split(": ")[0])
        assert source in {n.astimezone(tz) for n in nominal}
        assert not cal.is_working_day(source.date())
        assert (local.hour, local.minute) == (source.hour, source.minute)
        step = 1 if policy == "next" else -1
        assert (local.date() - source.date()).days * step > 0
        day = source.date() + timedelta(days=step)
        while day != local.date():
            assert not cal.is_working_day(day), (source, day, local)
            day += timedelta(days=step)
    for n in nominal:
        if after < n <= end and cal.is_working_day(n.astimezone(tz).date()):
            assert n in fired, n  # a fire on a business day stays where it is


def _between(fires: object, start: datetime, end: datetime) -> list[datetime]:
    out: list[datetime] = []
    current = start
    while True:
        nxt = fires.next_after(current)  # type: ignore[attr-defined]
        if nxt is None or nxt > end:
            return out
        out.append(nxt)
        current = nxt


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"country": "DX"}, r"calendars\.company\.country: unknown country 'DX'"),
        ({"country": "DE", "subdiv": "XX"}, r"calendars\.company\.subdiv: unknown subdivision 'XX' of DE"),
        ({"subdiv": "BE"}, r"calendars\.company\.subdiv: needs a country"),
    ],
)
def test_a_calendar_table_names_the_key_at_fault(table: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse({"calendars": {"company": table}})


def test_the_stored_first_fire_says_why_it_moved() -> None:
    """The first of the fires a schedule lists is the moved one itself, found from the fire before
    it (its regular time lies before it), not from the moment before it."""
    fires = fire_times(spec("0 9 1 * *", "DE-BE", "next"))
    assert isinstance(fires, FireTimes)
    moved = datetime(2026, 5, 4, 7, tzinfo=UTC)
    assert fires.next_after(AFTER) == moved
    assert fires.note_of(moved) == "moved from 2026-05-01T09:00:00+02:00: 2026-05-01 is Labor Day (DE-BE)"
    assert fires.note_of(datetime(2026, 6, 1, 7, tzinfo=UTC)) == ""
    assert fires.note_of(datetime(2026, 5, 4, 8, tzinfo=UTC)) == "", "no fire at that time"
    assert fires.fire_before(moved) == datetime(2026, 4, 1, 7, tzinfo=UTC)


def test_the_harness_writes_no_skipped_row_ahead_of_its_time() -> None:
    with SchedulerHarness([spec("0 9 1 * *", "DE-BE")], start=datetime(2026, 3, 31, tzinfo=UTC)) as harness:
        harness.advance(2 * 86400)  # past 1 April's fire, which plans past 1 May
        assert [r.scheduled_for for r in harness.store.history(schedule="payroll", limit=20)] == [
            datetime(2026, 4, 1, 7, tzinfo=UTC)
        ]
