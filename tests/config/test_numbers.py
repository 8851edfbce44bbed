"""Every number is checked where it enters: the TOML config, plugin options, decorators, schedule
specs and ``tickwork jobs add``; bad ones give one ``tickwork: error:`` line naming the key."""

from __future__ import annotations

import math
import re
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.cli import Tickwork, error_of, write_config
from tests.support.cli import jobs_module as jobs_module  # the fixtures
from tests.support.cli import tw as tw
from tests.support.cli import workdir as workdir
from tickwork.engine import EngineSettings
from tickwork.errors import ConfigError, DeclarationError, TriggerError
from tickwork.scheduling.declare import schedule
from tickwork.scheduling.triggers import get_trigger
from tickwork.structures import ScheduleSpec
from tickwork_local.deadlines import Deadlines

pytestmark = pytest.mark.usefixtures("workdir")


@pytest.mark.parametrize(
    ("table", "line", "message"),
    [
        ("scheduler", "hard_timeout_grace = nan", "scheduler.hard_timeout_grace: must be a finite number >= 1"),
        ("scheduler", "max_sleep = inf", "scheduler.max_sleep: must be a finite number > 0 and <= 86400, got inf"),
        ("scheduler", "history_retention_days = 1e10", "scheduler.history_retention_days: must be a finite number"),
        (
            "store",
            'plugin = "sqlite"\npoll_interval = 0',
            "store.poll_interval: must be a finite number >= 0.01 and <= 60, got 0",
        ),
        (
            "store",
            'plugin = "sqlite"\nbusy_timeout = -5',
            "store.busy_timeout: must be a finite number >= 0 and <= 3600, got -5",
        ),
        ("store", 'plugin = "sqlite"\nbatch_size = 0', "store.batch_size: must be an integer from 1 to 100000, got 0"),
        ("membership", 'plugin = "hashring"\nheartbeat_interval = nan', "membership.heartbeat_interval: must be"),
        ("membership", 'plugin = "hashring"\nvnodes = 0', "membership.vnodes: must be an integer from 1 to 10000"),
        (
            "store",
            'plugin = "postgres"\nurl = "postgresql://u@localhost:port/db"',
            "store: url: the port of the database URL is not a number",
        ),
    ],
)
def test_bad_numbers_in_the_config_are_one_line_exit_2(tw: Tickwork, table: str, line: str, message: str) -> None:
    write_config(Path("tickwork.toml"), f"[{table}]\n{line}\n")
    err = error_of(tw("run", "--for", "1"), 2)
    assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--retries", "5000"], "retries: must be an integer from 0 to 100, got 5000"),
        (["--timeout", "1e10"], "timeout: must be more than 0 s and at most 30 days"),
    ],
)
def test_jobs_add_refuses_out_of_range_numbers(tw: Tickwork, jobs_module: str, args: list[str], message: str) -> None:
    err = error_of(tw("jobs", "add", "x", "* * * * *", f"{jobs_module}:ok", *args), 2)
    assert message in err


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_jobs_add_refuses_a_backoff_that_is_not_a_finite_number(
    tw: Tickwork, jobs_module: str, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as info:
        tw("jobs", "add", "x", "* * * * *", f"{jobs_module}:ok", f"--retry-backoff={value}")
    assert info.value.code == 2
    assert "argument --retry-backoff: must be >= 0 seconds, got" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("expression", "kind", "message"),
    [
        ("9" * 5000 + "s", "interval", "interval: the number in '9999"),
        ("*/" + "9" * 5000 + " * * * *", "cron", "cron: invalid expression '*/999"),
        ("*:*:0/0.5", "calendar", "fires less than 1 s apart"),
        ("*:*:1.5,1.7", "calendar", "fires less than 1 s apart"),
    ],
)
def test_bad_trigger_numbers_and_sub_second_periods_are_refused(
    tw: Tickwork, jobs_module: str, expression: str, kind: str, message: str
) -> None:
    err = error_of(tw("jobs", "add", "x", expression, f"{jobs_module}:ok", "--kind", kind), 2)
    assert message in err and err.count("\n") == 1


def test_next_shows_a_5000_digit_duration_as_one_line(tw: Tickwork) -> None:
    err = error_of(tw("next", "every " + "9" * 5000 + "s", "--kind", "interval"), 2)
    assert err.count("\n") == 1


def job() -> None:
    pass


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": math.nan}, "timeout: expected a finite number of seconds, got float nan"),
        ({"timeout": math.inf}, "timeout: expected a finite number of seconds, got float inf"),
        ({"timeout": 1e10}, "timeout: must be more than 0 s and at most 30 days, got 1e+10 s"),
        ({"timeout": "5x"}, "timeout: expected a finite number of seconds or a duration like '90s'"),
        ({"retry_backoff": math.inf}, "retry_backoff: expected a finite number of seconds, got float inf"),
        ({"retry_backoff": "2d"}, "retry_backoff: must be from 0 s to 1 day, got 172800 s"),
        ({"retries": 5000}, "retries: must be an integer from 0 to 100"),
    ],
)
def test_decorators_refuse_bad_numbers_naming_the_function(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(DeclarationError, match=rf"{re.escape(__name__)}\.job\b.*: " + message.replace("+", r"\+")):
        schedule("cron", "* * * * *", name="n", **kwargs)(job)  # type: ignore[arg-type]


def test_decorators_refuse_sub_second_calendars() -> None:
    with pytest.raises(DeclarationError, match="fires less than 1 s apart"):
        schedule("calendar", "*:*:0/0.000001", name="n")(job)


def test_specs_and_engine_settings_check_their_ranges() -> None:
    with pytest.raises(ValueError, match="timeout: must be more than 0 s and at most 30 days"):
        ScheduleSpec("n", "cron", "* * * * *", "m:f", timeout=timedelta(seconds=1e10))
    with pytest.raises(ValueError, match="retry_backoff: must be from 0 s to 1 day"):
        ScheduleSpec("n", "cron", "* * * * *", "m:f", retry_backoff=timedelta(days=2))
    for key in ("max_sleep", "reap_interval", "hard_timeout_grace"):
        for bad in (math.nan, math.inf, 0.0):
            with pytest.raises(ConfigError, match=f"scheduler.{key}: "):
                EngineSettings(node_id="n", **{key: bad})  # type: ignore[arg-type]


def test_a_trigger_refusing_a_huge_number_is_a_trigger_error() -> None:
    with pytest.raises(TriggerError, match="cron: invalid expression"):
        get_trigger("cron", "*/" + "9" * 5000 + " * * * *")


def test_a_huge_soft_timeout_does_not_stop_the_others() -> None:
    deadlines = Deadlines()
    deadlines.start()
    fired = threading.Event()
    try:
        deadlines.add(1e10, lambda: None)  # beyond threading.TIMEOUT_MAX
        deadlines.add(0.01, fired.set)
        assert fired.wait(10), "the deadline thread died"
    finally:
        deadlines.stop()
