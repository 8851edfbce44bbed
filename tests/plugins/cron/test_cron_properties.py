"""Property tests: next_after against a brute-force reading of the documented rules.

The oracle below decides for one instant whether the trigger must fire then, straight from the
rules in docs/triggers.md (wall-time match, DST gap/repeat handling), without the search tables.
Scanning every step between ``after`` and ``next_after(after)`` then shows that the result is a
fire time and that nothing before it is.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tickwork.errors import TriggerError
from tickwork_cron import CronTrigger
from tickwork_cron.grammar import CronFields

SECOND = timedelta(seconds=1)


def wall_matches(fields: CronFields, wall: datetime) -> bool:
    if fields.years is not None and wall.year not in fields.years:
        return False
    if (
        wall.month not in fields.months
        or wall.hour not in fields.hours
        or wall.minute not in fields.minutes
        or wall.second not in fields.seconds
    ):
        return False
    dom_ok = wall.day in fields.days
    dow_ok = wall.isoweekday() % 7 in fields.weekdays
    if fields.dom_star and fields.dow_star:
        return True
    if fields.dom_star:
        return dow_ok
    if fields.dow_star:
        return dom_ok
    return dom_ok or dow_ok


def must_fire(trigger: CronTrigger, instant: datetime) -> bool:
    """Whether the documented rules make ``trigger`` fire at the whole-second UTC ``instant``."""
    zone = ZoneInfo(trigger.timezone)
    local = instant.astimezone(zone)
    wall = local.replace(tzinfo=None)
    every_hour = trigger.fields.hour_star
    if wall_matches(trigger.fields, wall):
        repeated = local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset()
        return every_hour or not (repeated and local.fold == 1)
    if not every_hour:
        previous_wall = (instant - SECOND).astimezone(zone).replace(tzinfo=None)
        skipped = int((wall - previous_wall) / SECOND) - 1
        # A gap just ended at this instant: fire if any skipped wall time matched.
        return any(wall_matches(trigger.fields, previous_wall + k * SECOND) for k in range(1, skipped + 1))
    return False


def check(trigger: CronTrigger, after: datetime, step: timedelta, horizon: timedelta) -> None:
    nxt = trigger.next_after(after)
    assert nxt is not None
    assert nxt > after
    assert nxt.tzinfo is UTC
    assert must_fire(trigger, nxt), (trigger, after, nxt)
    # The first scanned instant is the first multiple of ``step`` strictly after ``after``.
    probe = after.replace(second=0, microsecond=0) if step == 60 * SECOND else after.replace(microsecond=0)
    probe += step
    while probe < nxt and probe - after <= horizon:
        assert not must_fire(trigger, probe), (trigger, after, probe, nxt)
        probe += step


MINUTE_FIELD = st.one_of(
    st.just("*"),
    st.integers(1, 30).map(lambda n: f"*/{n}"),
    st.lists(st.integers(0, 59), min_size=1, max_size=4).map(lambda v: ",".join(map(str, v))),
)
HOUR_NEAR_TRANSITIONS = st.one_of(
    st.just("*"),
    st.lists(st.integers(0, 4), min_size=1, max_size=3).map(lambda v: ",".join(map(str, v))),
    st.integers(1, 3).map(lambda h: f"{h}-{h + 1}"),
)
# Whole minutes within about three hours either side of a 2026 transition.
TRANSITIONS = [
    ("Europe/Berlin", datetime(2026, 3, 29, 1, tzinfo=UTC)),
    ("Europe/Berlin", datetime(2026, 10, 25, 1, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 3, 8, 7, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 11, 1, 6, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 10, 3, 15, 30, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 4, 4, 15, tzinfo=UTC)),
]


@settings(max_examples=400, deadline=None, database=None)
@given(
    minute=MINUTE_FIELD,
    hour=HOUR_NEAR_TRANSITIONS,
    where=st.sampled_from(TRANSITIONS),
    offset_seconds=st.integers(-3 * 3600, 3 * 3600),
)
def test_next_is_the_first_fire_around_dst(
    minute: str, hour: str, where: tuple[str, datetime], offset_seconds: int
) -> None:
    zone, transition = where
    trigger = CronTrigger(f"{minute} {hour} * * *", zone)
    check(trigger, transition + timedelta(seconds=offset_seconds), 60 * SECOND, timedelta(hours=8))


SECOND_FIELD = st.one_of(
    st.just("*"),
    st.integers(1, 40).map(lambda n: f"*/{n}"),
    st.lists(st.integers(0, 59), min_size=1, max_size=3).map(lambda v: ",".join(map(str, v))),
    st.tuples(st.integers(0, 58), st.integers(1, 20)).map(lambda t: f"{t[0]}-59/{t[1]}"),
)


@settings(max_examples=150, deadline=None, database=None)
@given(
    second=SECOND_FIELD,
    minute=st.one_of(st.just("*"), st.integers(2, 7).map(lambda n: f"*/{n}")),
    zone=st.sampled_from(["UTC", "Europe/Berlin"]),
    after=st.datetimes(datetime(2000, 1, 1), datetime(2040, 1, 1)).map(lambda d: d.replace(tzinfo=UTC)),
)
def test_next_is_the_first_fire_for_seconds(second: str, minute: str, zone: str, after: datetime) -> None:
    trigger = CronTrigger(f"{second} {minute} * * * *", zone)
    check(trigger, after, SECOND, timedelta(minutes=10))


DAY_EXPRESSION = st.tuples(
    st.one_of(st.just("*"), st.lists(st.integers(1, 31), min_size=1, max_size=3).map(lambda v: ",".join(map(str, v)))),
    st.one_of(st.just("*"), st.lists(st.integers(1, 12), min_size=1, max_size=3).map(lambda v: ",".join(map(str, v)))),
    st.one_of(st.just("*"), st.lists(st.integers(0, 7), min_size=1, max_size=3).map(lambda v: ",".join(map(str, v)))),
).map(lambda t: f"0 0 {t[0]} {t[1]} {t[2]}")


#: The most days each month has (February in a leap year).
LONGEST_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}


@settings(max_examples=100, deadline=None, database=None)
@example(expression="0 0 31 4 *", after=datetime(2000, 1, 1))  # found by CI: April has no 31st
@example(expression="0 0 30,31 2 *", after=datetime(2000, 1, 1))
@given(expression=DAY_EXPRESSION, after=st.datetimes(datetime(1990, 1, 1), datetime(2100, 1, 1)))
def test_day_fields_scan_by_day(expression: str, after: datetime) -> None:
    trigger = CronTrigger(expression)
    start = after.replace(tzinfo=UTC)
    nxt = trigger.next_after(start)
    if nxt is None:
        # Only a day of month that no chosen month has (31 in April, 30 in February) can make a
        # 5-field expression never fire.
        assert not trigger.fields.dom_star and trigger.fields.dow_star
        assert all(day > LONGEST_MONTH[m] for day in trigger.fields.days for m in trigger.fields.months)
        return
    assert nxt > start and must_fire(trigger, nxt)
    day = start.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    while day < nxt:
        assert not must_fire(trigger, day), (expression, start, day)
        day += timedelta(days=1)


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(st.text(alphabet="0123456789*/,-? LW#@JANMONSUFRIabcdjklxyz\t", max_size=40), st.text(max_size=40)))
def test_parsing_only_ever_raises_trigger_error(text: str) -> None:
    try:
        trigger = CronTrigger(text)
    except TriggerError:
        return
    # Whatever parses has a canonical form that parses to the same schedule.
    again = CronTrigger(trigger.normalized())
    assert again.normalized() == trigger.normalized()
    assert again.fields == trigger.fields


@settings(max_examples=100, deadline=None, database=None)
@given(
    fields=st.tuples(SECOND_FIELD, MINUTE_FIELD, HOUR_NEAR_TRANSITIONS, DAY_EXPRESSION),
    after=st.datetimes(datetime(2000, 1, 1), datetime(2040, 1, 1)).map(lambda d: d.replace(tzinfo=UTC)),
)
def test_normalized_form_fires_identically(fields: tuple[str, str, str, str], after: datetime) -> None:
    second, minute, hour, day_expression = fields
    dom, month, dow = day_expression.split()[2:]
    trigger = CronTrigger(f"{second} {minute} {hour} {dom} {month} {dow}", "Europe/Berlin")
    again = CronTrigger(trigger.normalized(), "Europe/Berlin")
    assert again.normalized() == trigger.normalized()
    current: datetime | None = after
    for _ in range(3):
        assert current is not None
        expected = trigger.next_after(current)
        assert again.next_after(current) == expected
        current = expected
        if current is None:
            break
