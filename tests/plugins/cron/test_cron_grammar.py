"""Parsing, rejection messages, recognition and the canonical form of cron expressions."""

from __future__ import annotations

import pytest

from tickwork.errors import TriggerError
from tickwork_cron import CronTrigger


def fields(expression: str) -> tuple[list[int], ...]:
    f = CronTrigger(expression).fields
    years = sorted(f.years) if f.years is not None else []
    return (*(sorted(s) for s in (f.seconds, f.minutes, f.hours, f.days, f.months, f.weekdays)), years)


class TestFieldCounts:
    def test_five_fields_have_second_zero(self) -> None:
        secs, mins, hours, *_ = fields("*/15 3 * * *")
        assert secs == [0]
        assert mins == [0, 15, 30, 45]
        assert hours == [3]

    def test_six_fields_put_seconds_first(self) -> None:
        secs, mins, hours, *_ = fields("10 20 3 * * *")
        assert (secs, mins, hours) == ([10], [20], [3])

    def test_seven_fields_add_a_year_last(self) -> None:
        *_, years = fields("0 0 0 1 1 * 2030-2034/2")
        assert years == [2030, 2032, 2034]

    def test_seventh_field_star_means_any_year(self) -> None:
        assert CronTrigger("0 0 0 1 1 * *").fields.years is None

    @pytest.mark.parametrize("expression", ["", "* * * *", "* * * * * * * *", "   "])
    def test_wrong_field_count(self, expression: str) -> None:
        with pytest.raises(TriggerError, match="expected 5"):
            CronTrigger(expression)


class TestItems:
    def test_ranges_steps_and_lists(self) -> None:
        _, mins, hours, days, months, dows, _ = fields("1-5,10,50-59/3 */6 5/10 1-12/4 1-5")
        assert mins == [1, 2, 3, 4, 5, 10, 50, 53, 56, 59]
        assert hours == [0, 6, 12, 18]
        assert days == [5, 15, 25]
        assert months == [1, 5, 9]
        assert dows == [1, 2, 3, 4, 5]

    def test_month_and_weekday_names_any_case(self) -> None:
        *_, months, dows, _ = fields("0 0 * jan,Mar-may MON-fri")
        assert months == [1, 3, 4, 5]
        assert dows == [1, 2, 3, 4, 5]

    def test_sunday_is_zero_and_seven(self) -> None:
        assert fields("0 0 * * 0")[5] == fields("0 0 * * 7")[5] == fields("0 0 * * SUN")[5] == [0]
        assert fields("0 0 * * 5-7")[5] == [0, 5, 6]
        assert fields("0 0 * * 0-7")[5] == list(range(7))

    def test_sun_ends_a_weekday_range(self) -> None:
        assert fields("0 0 * * FRI-SUN")[5] == [0, 5, 6]

    def test_step_from_a_single_value_runs_to_the_end(self) -> None:
        assert fields("50/3 * * * *")[1] == [50, 53, 56, 59]
        assert fields("0 0 * * 4/2")[5] == [4, 6]


class TestWords:
    @pytest.mark.parametrize(
        ("word", "equivalent"),
        [
            ("@yearly", "0 0 1 1 *"),
            ("@annually", "0 0 1 1 *"),
            ("@monthly", "0 0 1 * *"),
            ("@weekly", "0 0 * * 0"),
            ("@daily", "0 0 * * *"),
            ("@midnight", "0 0 * * *"),
            ("@hourly", "0 * * * *"),
            ("  @HOURLY ", "0 * * * *"),
        ],
    )
    def test_words(self, word: str, equivalent: str) -> None:
        assert CronTrigger(word).normalized() == CronTrigger(equivalent).normalized()

    def test_reboot_is_not_supported(self) -> None:
        with pytest.raises(TriggerError, match="'@reboot' is not supported"):
            CronTrigger("@reboot")

    def test_unknown_word_lists_the_known_ones(self) -> None:
        with pytest.raises(TriggerError, match=r"unknown cron word '@every'.*@hourly"):
            CronTrigger("@every")


class TestRejections:
    @pytest.mark.parametrize(
        ("expression", "message"),
        [
            ("5-1 * * * *", r"minute field: range '5-1' is reversed"),
            ("0 0 * * FRI-MON", r"day-of-week field: range 'FRI-MON' is reversed"),
            ("60 * * * *", r"minute field: 60 in '60' is out of range 0-59"),
            ("0 24 * * *", r"hour field: 24 in '24' is out of range 0-23"),
            ("0 0 0 * *", r"day-of-month field: 0 in '0' is out of range 1-31"),
            ("0 0 32 * *", r"day-of-month field: 32"),
            ("0 0 * 13 *", r"month field: 13 in '13' is out of range 1-12"),
            ("0 0 * * 8", r"day-of-week field: 8 in '8' is out of range 0-7"),
            ("60 0 0 * * *", r"second field: 60"),
            ("0 0 0 * * * 1969", r"year field: 1969 in '1969' is out of range 1970-2199"),
            ("0 0 0 * * * 2200", r"year field: 2200"),
            ("*/0 * * * *", r"minute field: step 0 in '\*/0' must be between 1 and 60"),
            ("*/61 * * * *", r"minute field: step 61"),
            ("*/x * * * *", r"minute field: step 'x' in '\*/x' is not a positive integer"),
            ("1,,2 * * * *", r"minute field: empty list item in '1,,2'"),
            ("a * * * *", r"minute field: 'a' in 'a' is not a number"),
            ("0 0 * FOO *", r"month field: unknown name 'FOO'"),
            ("0 0 * * MON-FOO", r"day-of-week field: unknown name 'FOO'"),
            ("0 0 MON * *", r"day-of-month field: 'MON' in 'MON' is not a number"),
            ("0 0 * * 1-", r"day-of-week field: cannot parse '1-'"),
            ("*-5 * * * *", r"minute field: cannot parse '\*-5'"),
            ("0 0 * * -1", r"day-of-week field: cannot parse '-1'"),
        ],
    )
    def test_invalid_values_name_the_field(self, expression: str, message: str) -> None:
        with pytest.raises(TriggerError, match=message):
            CronTrigger(expression)

    @pytest.mark.parametrize(
        ("expression", "message"),
        [
            ("0 0 ? * 1", r"day-of-month field: '\?' is not supported"),
            ("0 0 * * ?", r"day-of-week field: '\?' is not supported"),
            ("0 0 L * *", r"day-of-month field: 'L' \(last day\) is not supported in 'L'"),
            ("0 0 LW * *", r"day-of-month field: 'W' \(nearest weekday\) is not supported"),
            ("0 0 15W * *", r"day-of-month field: 'W' \(nearest weekday\) is not supported in '15W'"),
            ("0 0 L-3 * *", r"'L' \(last day\) is not supported"),
            ("0 0 * * 5L", r"day-of-week field: 'L' \(last day\) is not supported in '5L'"),
            ("0 0 * * 5#3", r"day-of-week field: '#' \(nth weekday of the month\) is not supported"),
            ("0 0 * * FRI#1", r"'#' \(nth weekday of the month\) is not supported"),
        ],
    )
    def test_quartz_extensions_are_not_supported(self, expression: str, message: str) -> None:
        with pytest.raises(TriggerError, match=message):
            CronTrigger(expression)

    def test_month_and_weekday_names_containing_l_and_w_still_work(self) -> None:
        assert fields("0 0 * JUL WED")[4:6] == ([7], [3])

    @pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../etc/passwd", "Europe/"])
    def test_invalid_time_zone(self, zone: str) -> None:
        with pytest.raises(TriggerError, match="timezone"):
            CronTrigger("* * * * *", zone)

    def test_non_string_expression(self) -> None:
        with pytest.raises(TriggerError, match="must be a string"):
            CronTrigger(5)  # type: ignore[arg-type]


class TestRecognizes:
    @pytest.mark.parametrize(
        "expression",
        [
            "* * * * *",
            "*/5 * * * *",
            "0 0 * * 1-5",
            "0 30 9 * * MON-FRI",
            "0 0 0 1 1 * 2030",
            "@daily",
            "@reboot",
            "0 0 L * *",
            " 0 0 * jan sun ",
        ],
    )
    def test_cron_like(self, expression: str) -> None:
        assert CronTrigger.recognizes(expression)

    @pytest.mark.parametrize(
        "expression",
        [
            "90s",
            "1h30m",
            "2026-12-01T10:00:00Z",
            "Mon *-*-* 10:00:00",
            "daily",
            "* * * *",
            "* * * * * * * *",
            "every day at noon ok",
            "0 0 * * 1.5",
        ],
    )
    def test_not_cron(self, expression: str) -> None:
        assert not CronTrigger.recognizes(expression)


class TestNormalized:
    @pytest.mark.parametrize(
        ("expression", "canonical"),
        [
            ("*/5 * * * *", "0 */5 * * * *"),
            ("0,15,30,45 * * * *", "0 */15 * * * *"),
            ("0 9 * * MON-FRI", "0 0 9 * * 1-5"),
            ("0 9 * * 1,2,3,4,5", "0 0 9 * * 1-5"),
            ("0 0 * * 7", "0 0 0 * * 0"),
            ("0 0 * * FRI-SUN", "0 0 0 * * 0,5-6"),
            # An hour field is '*' only if written with a star: '0-23' keeps fixed-time DST rules.
            ("5-59/2 0-23 1-31 1-12 *", "0 5-59/2 0-23 1-31 * *"),
            ("5-59/2 * 1-31 1-12 *", "0 5-59/2 * 1-31 * *"),
            ("0 */2 * * *", "0 0 */2 * * *"),
            ("0 0-22/2 * * *", "0 0 0-22/2 * * *"),
            ("0 1-23/2 * * *", "0 0 1-23/2 * * *"),
            ("0 */5,3 * * *", "0 0 */24,3,5,10,15,20 * * *"),
            ("0 0 * * 0-6", "0 0 0 * * 0-6"),
            ("1,2,3,10 * * jan-mar *", "0 1-3,10 * * 1-3 *"),
            ("@weekly", "0 0 0 * * 0"),
            ("0 0 0 1 1 * *", "0 0 0 1 1 *"),
            ("0 0 0 1 1 * 2030,2031", "0 0 0 1 1 * 2030-2031"),
        ],
    )
    def test_canonical_form(self, expression: str, canonical: str) -> None:
        assert CronTrigger(expression).normalized() == canonical

    def test_canonical_form_is_a_fixed_point(self) -> None:
        for expression in ["0 5-59/2 * 1-31 * *", "0 0 0 * * 0,5-6", "0 0 0 1 1 * 2030-2031", "*/7 1,3 2-4 * 1 *"]:
            assert CronTrigger(expression).normalized() == expression
