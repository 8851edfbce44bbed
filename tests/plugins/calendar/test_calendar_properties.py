"""Property tests for the calendar trigger (hypothesis)."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tickwork.errors import TriggerError
from tickwork_calendar import CalendarTrigger
from tickwork_calendar.libc_time import LibcClock
from tickwork_calendar.search import SearchLimitError, emulated_next

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Europe/Dublin",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/Santiago",
    "Asia/Kolkata",
]
WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def _chain(low: int, high: int, *, fractions: bool = False) -> st.SearchStrategy[str]:
    number = st.integers(low, high).map(str)
    if fractions:
        number = st.one_of(
            number, st.tuples(st.integers(low, high), st.integers(0, 999)).map(lambda pair: f"{pair[0]}.{pair[1]:03d}")
        )
    item = st.one_of(
        number,
        st.tuples(number, number).map(lambda pair: f"{pair[0]}..{pair[1]}"),
        st.tuples(number, st.integers(1, max(1, high - low))).map(lambda pair: f"{pair[0]}/{pair[1]}"),
    )
    return st.one_of(st.just("*"), st.lists(item, min_size=1, max_size=3).map(",".join))


@st.composite
def expressions(draw: st.DrawFn) -> str:
    parts: list[str] = []
    if draw(st.booleans()):
        first = draw(st.integers(0, 6))
        last = draw(st.integers(first, 6))
        parts.append(WEEKDAYS[first] + (f"..{WEEKDAYS[last]}" if last > first else ""))
    if draw(st.booleans()):
        separator = draw(st.sampled_from(["-", "-", "~"]))
        day = draw(_chain(1, 31 if separator == "-" else 7))
        year = draw(st.one_of(st.just(""), _chain(2024, 2060).map(lambda y: y + "-")))
        parts.append(f"{year}{draw(_chain(1, 12))}{separator}{day}")
    time = f"{draw(_chain(0, 23))}:{draw(_chain(0, 59))}"
    if draw(st.booleans()):
        time += ":" + draw(_chain(0, 59, fractions=True))
    parts.append(time)
    zone = draw(st.sampled_from(["", *ZONES]))
    if zone:
        parts.append(zone)
    return " ".join(parts)


instants = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2150, 1, 1), timezones=st.just(UTC))


def _trigger(expression: str) -> CalendarTrigger | None:
    try:
        return CalendarTrigger(expression)
    except TriggerError:
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(), instants)
def test_next_is_strictly_later(expression: str, after: datetime) -> None:
    trigger = _trigger(expression)
    if trigger is None:
        return
    current = after
    for _ in range(3):
        found = trigger.next_after(current)
        if found is None:
            return
        assert found > current
        assert found.tzinfo == UTC
        current = found


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_random_text_only_raises_trigger_error(text: str) -> None:
    with contextlib.suppress(TriggerError):
        CalendarTrigger(text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789*-~:.,/ @MonTuesWdhFriSatSun", max_size=30))
def test_grammar_soup_only_raises_trigger_error(text: str) -> None:
    try:
        trigger = CalendarTrigger(text)
    except TriggerError:
        return
    trigger.next_after(datetime(2026, 1, 1, tzinfo=UTC))


@settings(max_examples=300, deadline=None)
@given(expressions())
def test_normalized_form_is_a_fixed_point(expression: str) -> None:
    trigger = _trigger(expression)
    if trigger is None:
        return
    again = CalendarTrigger(trigger.normalized())
    assert again.normalized() == trigger.normalized()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(), st.sampled_from(ZONES[1:]), st.integers(0, 200), st.integers(-48 * 3600, 48 * 3600))
def test_fast_search_agrees_with_replaying_systemd(expression: str, zone: str, pick: int, shift: int) -> None:
    """The zone-free search may only be taken where the step-by-step replay gives the same answer."""
    trigger = _trigger(f"{expression.rsplit(' ', 1)[0] if expression.split()[-1] in ZONES else expression}")
    if trigger is None or trigger.spec.utc or trigger.spec.timezone:
        return
    trigger = CalendarTrigger(trigger.expression, zone)
    assert trigger._zone is not None
    changes = [c for c in trigger._zone._changes if 946_684_800 < c < 4_102_444_800] or [1_767_225_600]
    after_us = (changes[pick % len(changes)] + shift) * 1_000_000 + pick
    clock = LibcClock(trigger._zone)
    clock.guess = -trigger._zone.offset(after_us // 1_000_000)
    try:
        replayed = emulated_next(trigger.spec, clock, after_us)
    except SearchLimitError:
        return
    assert trigger._next_us(after_us) == replayed, EPOCH + timedelta(microseconds=after_us)
