"""A schedule's options are declared once (``tickwork.scheduling.options.OPTIONS``): the
decorators, ``Admin.add``/``update``, ``tickwork jobs add|update`` and schedule files take the same
names, read each the same way, and durations are read by one parser everywhere."""

from __future__ import annotations

import json
import typing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import tickwork
from tickwork.admin.writes import UPDATABLE
from tickwork.cli import main
from tickwork.errors import ConfigError, DeclarationError, TriggerError
from tickwork.scheduling import schedulefile
from tickwork.scheduling.declare import declared_in, schedule
from tickwork.scheduling.durations import DurationError, parse_duration, seconds_in
from tickwork.scheduling.options import ALIASES, CODE_NAMES, NAMES, OPTIONS, CodeOptions, ScheduleOptions
from tickwork.scheduling.triggers import get_trigger
from tickwork.structures import MisfirePolicy, ScheduleSpec

WITH_ARGS = "tests.support.jobs_for_tests:with_args"


class Sample(typing.NamedTuple):
    value: Any  # as Python, TOML or JSON gives it
    text: list[str]  # the command-line words
    stored: Any  # the ScheduleSpec field's value


#: A value other than the default for every option: a new option without one fails every test below.
SAMPLES: dict[str, Sample] = {
    "kind": Sample("cron", ["--kind", "cron"], "cron"),
    "tz": Sample("Europe/Oslo", ["--tz", "Europe/Oslo"], "Europe/Oslo"),
    "executor": Sample("local", ["--executor", "local"], "local"),
    "args": Sample({"city": "Oslo"}, ["--args", '{"city": "Oslo"}'], {"city": "Oslo"}),
    "timeout": Sample("1m30s", ["--timeout", "1m30s"], timedelta(seconds=90)),
    "retries": Sample(3, ["--retries", "3"], 3),
    "retry_backoff": Sample("2m", ["--retry-backoff", "2m"], timedelta(minutes=2)),
    "misfire": Sample("once", ["--misfire", "once"], MisfirePolicy.ONCE),
    "enabled": Sample(False, ["--disabled"], False),
    "pause_after_failures": Sample(3, ["--pause-after-failures", "3"], 3),
    "jitter": Sample("30s", ["--jitter", "30s"], timedelta(seconds=30)),
    "start_at": Sample(
        "2026-12-01T09:00:00+01:00",
        ["--start-at", "2026-12-01T09:00:00+01:00"],
        datetime(2026, 12, 1, 8, tzinfo=UTC),
    ),
    "end_at": Sample("2027-01-01T00:00:00Z", ["--end-at", "2027-01-01T00:00:00Z"], datetime(2027, 1, 1, tzinfo=UTC)),
    "misfire_grace": Sample("2m", ["--misfire-grace", "2m"], timedelta(minutes=2)),
    "max_catchup": Sample(4, ["--max-catchup", "4"], 4),
    "max_runs": Sample(5, ["--max-runs", "5"], 5),
    "on_finish": Sample("remove", ["--on-finish", "remove"], "remove"),
    "on_abandon": Sample("rerun", ["--on-abandon", "rerun"], "rerun"),
    "also": Sample(["30 18 * * *"], ["--also", "30 18 * * *"], ("30 18 * * *",)),
    "exclude": Sample(["*-12-25", "Sat,Sun"], ["--exclude", "*-12-25", "--exclude", "Sat,Sun"], ("*-12-25", "Sat,Sun")),
    "overlap": Sample("buffer_one", ["--overlap", "buffer_one"], "buffer_one"),
    "max_concurrent": Sample(3, ["--max-concurrent", "3"], 3),
    "concurrency_key": Sample("billing", ["--concurrency-key", "billing"], "billing"),
    "concurrency_limit": Sample(2, ["--concurrency-limit", "2"], 2),
    "holidays": Sample("DE-BE", ["--holidays", "DE-BE"], "DE-BE"),
    "on_holiday": Sample("next", ["--on-holiday", "next"], "next"),
}


def job() -> None:
    """A declared job's function (module level: a job is imported by name)."""


def stored(name: str) -> ScheduleSpec:
    with tickwork.connect() as admin:
        return admin.store().get(name).spec


def test_every_reader_takes_the_same_names() -> None:
    assert set(SAMPLES) == set(NAMES)
    assert set(ScheduleOptions.__annotations__) == set(NAMES) | set(ALIASES)
    assert set(CodeOptions.__annotations__) == set(CODE_NAMES) | set(ALIASES)
    # A declared job takes no arguments; its kind is the decorator's.
    assert set(NAMES) - set(CODE_NAMES) == {"kind", "args"}
    # A file's entry may also name its namespace (docs/teams.md), which is no option of jobs add.
    assert (*NAMES, "namespace") == schedulefile.OPTIONAL
    assert ("expression", "target", *NAMES) == UPDATABLE
    for option in OPTIONS:
        assert option.field in {f for f in ScheduleSpec.__dataclass_fields__}, option


@pytest.mark.parametrize("option", CODE_NAMES)
def test_the_decorator_takes_every_option(option: str) -> None:
    sample = SAMPLES[option]
    name = f"options-{option}"
    schedule("cron", "0 3 * * *", name=name, **{option: sample.value})(job)  # type: ignore[misc]
    [declared] = [j for j in declared_in(__name__) if j.spec.name == name]
    assert getattr(declared.spec, _field(option)) == sample.stored


@pytest.mark.parametrize("option", NAMES)
def test_admin_add_takes_every_option(sqlite_project: Path, option: str) -> None:
    sample = SAMPLES[option]
    with tickwork.connect() as admin:
        admin.add("x", "0 3 * * *", WITH_ARGS, **{"args": {"city": "Bergen"}, option: sample.value})
    assert getattr(stored("x"), _field(option)) == sample.stored


@pytest.mark.parametrize("option", NAMES)
def test_jobs_add_takes_every_option(sqlite_project: Path, option: str) -> None:
    sample = SAMPLES[option]
    words = [] if option == "args" else ["--args", '{"city": "Bergen"}']
    assert main(["jobs", "add", "x", "0 3 * * *", WITH_ARGS, *words, *sample.text]) == 0
    assert getattr(stored("x"), _field(option)) == sample.stored


@pytest.mark.parametrize("option", [o for o in NAMES if o != "enabled"])  # update's switch is --enable/--disable
def test_jobs_update_takes_every_option(sqlite_project: Path, option: str) -> None:
    assert main(["jobs", "add", "x", "0 3 * * *", WITH_ARGS, "--args", '{"city": "Bergen"}']) == 0
    assert main(["jobs", "update", "x", *SAMPLES[option].text]) == 0
    assert getattr(stored("x"), _field(option)) == SAMPLES[option].stored


@pytest.mark.parametrize("suffix", [".jsonl", ".toml"])
def test_a_schedule_file_takes_every_option(sqlite_project: Path, suffix: str) -> None:
    fields = {"name": "x", "expression": "0 3 * * *", "target": WITH_ARGS} | {n: s.value for n, s in SAMPLES.items()}
    path = sqlite_project / f"schedules{suffix}"
    if suffix == ".toml":
        lines = [f"{key} = {json.dumps(value)}" for key, value in fields.items() if key != "args"]
        path.write_text("[[schedule]]\n" + "\n".join(lines) + '\nargs = { city = "Oslo" }\n', encoding="utf-8")
    else:
        path.write_text(json.dumps(fields) + "\n", encoding="utf-8")
    assert main(["jobs", "add", "--from", str(path)]) == 0
    spec = stored("x")
    for option, sample in SAMPLES.items():
        assert getattr(spec, _field(option)) == sample.stored, option


def test_timezone_is_another_spelling_of_tz(sqlite_project: Path) -> None:
    with tickwork.connect() as admin:
        admin.add("x", "0 3 * * *", WITH_ARGS, args={"city": "Oslo"}, timezone="Asia/Tokyo")
        assert admin.update("x", timezone="Europe/Oslo").timezone == "Europe/Oslo"
        with pytest.raises(TypeError, match="tz is given twice"):
            admin.add("y", "0 3 * * *", WITH_ARGS, tz="UTC", timezone="UTC")
    with pytest.raises(TypeError, match="unknown option 'args'; options: tz, executor, timeout"):
        schedule("cron", "0 3 * * *", args={})  # type: ignore[call-arg]


def test_defaults_come_from_the_spec(sqlite_project: Path) -> None:
    with tickwork.connect() as admin:
        admin.add("x", "0 3 * * *", WITH_ARGS, args={"city": "Oslo"})
    spec = stored("x")
    default = ScheduleSpec("d", "cron", "0 3 * * *", WITH_ARGS)
    for option in OPTIONS:
        if option.name not in ("kind", "args"):
            assert getattr(spec, option.field) == getattr(default, option.field), option.name


# -- durations ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("12.5", 12.5), ("90s", 90.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("2d", 172800.0)],
)
def test_one_duration_syntax(text: str, seconds: float) -> None:
    assert seconds_in(text) == seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5x", "unknown unit 'x' in '5x'"),
        ("30m1h", "unit 'h' in '30m1h' repeats or comes after a smaller unit"),
        ("soon", "not a number of seconds or a duration like '90s', '5m', '1h30m': 'soon'"),
    ],
)
def test_duration_errors_name_the_part(text: str, message: str) -> None:
    with pytest.raises(DurationError, match=message):
        seconds_in(text)


def test_every_reader_reads_durations_alike(sqlite_project: Path) -> None:
    """The same text gives the same duration to the decorator, the admin API, the CLI and the
    interval trigger; the interval trigger alone wants whole numbers (its fire times are whole
    seconds apart)."""
    schedule("cron", "0 3 * * *", name="durations", timeout="1h30m")(job)
    [declared] = [j for j in declared_in(__name__) if j.spec.name == "durations"]
    with tickwork.connect() as admin:
        admin.add("a", "0 3 * * *", WITH_ARGS, args={"city": "Oslo"}, timeout="1h30m")
    assert main(["jobs", "add", "c", "0 3 * * *", WITH_ARGS, "--args", '{"city": "Oslo"}', "--timeout", "1h30m"]) == 0
    interval = get_trigger("interval", "1h30m")
    assert declared.spec.timeout == stored("a").timeout == stored("c").timeout == parse_duration("1h30m")
    assert interval.normalized() == "1h30m"
    with pytest.raises(TriggerError, match=r"interval: cannot parse '1\.5h': the interval is written in whole numbers"):
        get_trigger("interval", "1.5h")


def test_a_bad_duration_names_the_option_everywhere(sqlite_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(DeclarationError, match=r"test_schedule_options\.job .*: timeout: .*got str '5x'"):
        schedule("cron", "0 3 * * *", name="bad", timeout="5x")(job)
    with tickwork.connect() as admin, pytest.raises(ConfigError, match=r"retry_backoff: .*got str '5x'"):
        admin.add("a", "0 3 * * *", WITH_ARGS, args={"city": "Oslo"}, retry_backoff="5x")
    with pytest.raises(SystemExit):
        main(["jobs", "add", "c", "0 3 * * *", WITH_ARGS, "--timeout", "5x"])
    assert "argument --timeout: not a number of seconds or a duration like" in capsys.readouterr().err


def _field(option: str) -> str:
    return next(o.field for o in OPTIONS if o.name == option)
