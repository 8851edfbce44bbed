"""The ``interval`` and ``once`` triggers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwork.errors import TriggerError
from tickwork.plugin.manager import PluginManager
from tickwork.scheduling.triggers import detect_kind, next_fire_times
from tickwork_cron import plugin as cron_plugin
from tickwork_interval import IntervalTrigger, OnceTrigger, plugin


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


class TestIntervalSyntax:
    @pytest.mark.parametrize(
        ("expression", "seconds"),
        [
            ("90s", 90),
            ("5m", 300),
            ("1h30m", 5400),
            ("2d", 172800),
            ("1w2d", 9 * 86400),
            ("1h 30m 15s", 5415),
            ("every 90s", 90),
            ("Every 1H30M", 5400),
            ("  45m  ", 2700),
        ],
    )
    def test_durations(self, expression: str, seconds: int) -> None:
        assert IntervalTrigger(expression).every == timedelta(seconds=seconds)

    @pytest.mark.parametrize(
        ("expression", "message"),
        [
            ("0s", r"interval: the duration '0s' must be positive"),
            ("0h0m", r"must be positive"),
            ("-5m", r"interval: cannot parse '-5m'"),
            ("5", r"interval: cannot parse '5'"),
            ("5x", r"interval: unknown unit 'x' in '5x'"),
            ("5min", r"interval: unknown unit 'min'"),
            ("30m1h", r"unit 'h' in '30m1h' repeats or comes after a smaller unit"),
            ("5m5m", r"unit 'm' in '5m5m' repeats"),
            ("1.5h", r"interval: cannot parse '1\.5h'"),
            ("", r"interval: the duration is empty"),
            ("every", r"interval: cannot parse 'every'"),
            ("@2026-01-01T00:00:00Z", r"interval: the duration is empty"),
            ("5m@tomorrow", r"interval anchor: 'tomorrow' is not an ISO-8601 date-time"),
            ("5m@2026-02-30T00:00:00Z", r"interval anchor: '2026-02-30T00:00:00Z' is not a valid date-time"),
            ("99999999999w", r"too long"),
        ],
    )
    def test_rejections_name_the_part(self, expression: str, message: str) -> None:
        with pytest.raises(TriggerError, match=message):
            IntervalTrigger(expression)

    def test_invalid_zone(self) -> None:
        with pytest.raises(TriggerError, match="timezone: unknown IANA zone 'Nowhere/Land'"):
            IntervalTrigger("5m", "Nowhere/Land")

    @pytest.mark.parametrize(
        ("expression", "canonical"),
        [
            ("5400s", "1h30m"),
            ("every 90s", "1m30s"),
            ("14d", "2w"),
            ("5m@1970-01-01T00:00:00Z", "5m"),
            ("5m @ 2026-01-01T01:00:00+01:00", "5m@2026-01-01T00:00:00Z"),
        ],
    )
    def test_normalized(self, expression: str, canonical: str) -> None:
        assert IntervalTrigger(expression).normalized() == canonical

    @pytest.mark.parametrize(
        "expression", ["90s", "1h30m", "every 5m", "2d@2026-01-01T00:00:00Z", "5m@2026-01-01T10:00"]
    )
    def test_recognizes(self, expression: str) -> None:
        assert IntervalTrigger.recognizes(expression)

    @pytest.mark.parametrize("expression", ["*/5 * * * *", "@hourly", "5", "daily", "2026-01-01T00:00:00Z", "5m@soon"])
    def test_does_not_recognize(self, expression: str) -> None:
        assert not IntervalTrigger.recognizes(expression)


class TestIntervalFiring:
    def test_epoch_anchor_is_shared_by_all_nodes(self) -> None:
        trigger = IntervalTrigger("7m")
        got = trigger.next_after(utc(2026, 1, 1, 0, 0, 1))
        assert got is not None
        assert (got - utc(1970, 1, 1)) % timedelta(minutes=7) == timedelta(0)
        assert timedelta(0) < got - utc(2026, 1, 1, 0, 0, 1) <= timedelta(minutes=7)

    def test_strictly_after_and_no_drift(self) -> None:
        trigger = IntervalTrigger("90s@2026-01-01T00:00:00Z")
        assert trigger.next_after(utc(2026, 1, 1, 0, 1, 30)) == utc(2026, 1, 1, 0, 3)
        assert trigger.next_after(utc(2026, 1, 1, 0, 1, 29, 999999)) == utc(2026, 1, 1, 0, 1, 30)
        # A late caller lands back on the grid instead of drifting.
        assert trigger.next_after(utc(2026, 1, 1, 0, 4, 17)) == utc(2026, 1, 1, 0, 4, 30)

    def test_anchor_is_the_first_fire(self) -> None:
        trigger = IntervalTrigger("1h@2026-06-01T12:00:00Z")
        assert trigger.next_after(utc(2020, 1, 1)) == utc(2026, 6, 1, 12)
        assert trigger.next_after(utc(2026, 6, 1, 12)) == utc(2026, 6, 1, 13)

    def test_naive_anchor_is_wall_time_in_the_zone(self) -> None:
        trigger = IntervalTrigger("1d@2026-03-28T12:00", "Europe/Berlin")
        assert trigger.anchor == utc(2026, 3, 28, 11)
        # Elapsed time: after the spring-forward the fires sit at 13:00 local wall time.
        assert trigger.next_after(utc(2026, 3, 28, 11)) == utc(2026, 3, 29, 11)

    def test_aware_anchor_ignores_the_zone(self) -> None:
        assert IntervalTrigger("1h@2026-01-01T00:00:00Z", "Asia/Tokyo").anchor == utc(2026, 1, 1)

    def test_anchor_in_a_dst_gap_is_rejected(self) -> None:
        with pytest.raises(TriggerError, match="does not exist in Europe/Berlin"):
            IntervalTrigger("1h@2026-03-29T02:30", "Europe/Berlin")

    def test_after_in_another_zone(self) -> None:
        after = datetime(2026, 1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))  # 00:00:30Z
        assert IntervalTrigger("1m").next_after(after) == utc(2026, 1, 1, 0, 1)

    def test_overflow_means_never(self) -> None:
        assert IntervalTrigger("1000w").next_after(utc(9999, 1, 1)) is None

    def test_naive_after_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="timezone-aware"):
            IntervalTrigger("1m").next_after(datetime(2026, 1, 1))

    @settings(max_examples=200, deadline=None, database=None)
    @given(
        seconds=st.integers(1, 10 * 86400),
        anchor=st.datetimes(datetime(1990, 1, 1), datetime(2060, 1, 1)),
        after=st.datetimes(datetime(1990, 1, 1), datetime(2060, 1, 1)),
    )
    def test_next_is_the_first_grid_point_after(self, seconds: int, anchor: datetime, after: datetime) -> None:
        anchor = anchor.replace(microsecond=0, tzinfo=UTC)
        after = after.replace(tzinfo=UTC)
        trigger = IntervalTrigger(f"{seconds}s@{anchor.isoformat()}")
        every = timedelta(seconds=seconds)
        nxt = trigger.next_after(after)
        assert nxt is not None and nxt > after and nxt >= anchor
        assert (nxt - anchor) % every == timedelta(0)
        assert nxt == anchor or nxt - every <= after


class TestOnce:
    def test_fires_once(self) -> None:
        trigger = OnceTrigger("2026-12-01T10:00:00Z")
        assert trigger.next_after(utc(2026, 1, 1)) == utc(2026, 12, 1, 10)
        assert trigger.next_after(utc(2026, 12, 1, 9, 59, 59, 999999)) == utc(2026, 12, 1, 10)
        assert trigger.next_after(utc(2026, 12, 1, 10)) is None
        assert trigger.next_after(utc(2027, 1, 1)) is None

    @pytest.mark.parametrize(
        ("expression", "zone", "expected"),
        [
            ("2026-12-01T10:00:00+02:00", "UTC", utc(2026, 12, 1, 8)),
            ("2026-12-01T10:00", "Europe/Berlin", utc(2026, 12, 1, 9)),
            ("2026-12-01t10:00:00z", "Europe/Berlin", utc(2026, 12, 1, 10)),
            ("2026-12-01T10:00:00.250000Z", "UTC", datetime(2026, 12, 1, 10, 0, 0, 250000, tzinfo=UTC)),
            # Repeated wall time: the first occurrence (02:30 CEST).
            ("2026-10-25T02:30:00", "Europe/Berlin", utc(2026, 10, 25, 0, 30)),
        ],
    )
    def test_forms(self, expression: str, zone: str, expected: datetime) -> None:
        assert OnceTrigger(expression, zone).at == expected

    @pytest.mark.parametrize(
        ("expression", "zone", "message"),
        [
            ("2026-03-29T02:30:00", "Europe/Berlin", r"once: '2026-03-29T02:30:00' does not exist in Europe/Berlin"),
            ("2026-12-01", "UTC", r"once: '2026-12-01' is not an ISO-8601 date-time"),
            ("2026-12-01 10:00", "UTC", r"is not an ISO-8601 date-time"),
            ("tomorrow", "UTC", r"is not an ISO-8601 date-time"),
            ("2026-13-01T10:00:00Z", "UTC", r"once: '2026-13-01T10:00:00Z' is not a valid date-time"),
            ("2026-12-01T10:00:00Z", "Bad/Zone", r"timezone: unknown IANA zone 'Bad/Zone'"),
        ],
    )
    def test_rejections(self, expression: str, zone: str, message: str) -> None:
        with pytest.raises(TriggerError, match=message):
            OnceTrigger(expression, zone)

    def test_normalized_is_utc(self) -> None:
        assert OnceTrigger("2026-12-01T10:00", "Europe/Berlin").normalized() == "2026-12-01T09:00:00Z"

    def test_recognizes(self) -> None:
        assert OnceTrigger.recognizes("2026-12-01T10:00:00Z")
        assert OnceTrigger.recognizes("2026-12-01T10:00")
        assert not OnceTrigger.recognizes("2026-12-01 10:00:00")  # systemd calendar syntax
        assert not OnceTrigger.recognizes("*-*-* 10:00:00")
        assert not OnceTrigger.recognizes("90s")


class TestRegistration:
    def test_plugin_registers_interval_and_once(self) -> None:
        manager = PluginManager(entry_points_enabled=False, extra=[plugin])
        assert manager.triggers.get("interval") is IntervalTrigger
        assert manager.triggers.get("once") is OnceTrigger

    @pytest.mark.parametrize(
        ("expression", "kind"),
        [("90s", "interval"), ("every 1h", "interval"), ("2026-12-01T10:00:00Z", "once"), ("*/5 * * * *", "cron")],
    )
    def test_kinds_are_told_apart(self, expression: str, kind: str) -> None:
        manager = PluginManager(entry_points_enabled=False, extra=[cron_plugin, plugin])
        assert detect_kind(expression, manager) == kind

    def test_engine_helper(self) -> None:
        got = next_fire_times("every 90s", after=utc(2026, 1, 1), n=2)
        assert got == [utc(2026, 1, 1, 0, 1, 30), utc(2026, 1, 1, 0, 3)]
