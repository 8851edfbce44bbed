"""Declaration mistakes are caught where they are made: a decorator without its parentheses, an
expression that can never fire, a cron expression with the wrong number of fields, a misspelt
zone, target, schedule, executor or plugin name ("did you mean"), a job module that declares
nothing (a warning in the node's banner)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import tickwork
from tickwork.cli import main
from tickwork.errors import DeclarationError, PluginNotFoundError, TriggerError
from tickwork.scheduling.triggers import check_zone, detect_kind

TASKS = "def backup() -> None:\n    pass\n"


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TICKWORK_CONFIG", raising=False)
    (tmp_path / "mistake_tasks.py").write_text(TASKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def job() -> None:
    """A module-level function to decorate."""


@pytest.mark.parametrize(
    ("decorator", "spelling"),
    [
        (tickwork.cron, '@tickwork.cron("0 3 * * *")'),
        (tickwork.calendar, '@tickwork.calendar("Mon..Fri 09:00")'),
        (tickwork.every, '@tickwork.every("90s")'),
        (tickwork.schedule, '@tickwork.schedule("cron", "0 3 * * *")'),
    ],
)
def test_a_bare_decorator_raises_at_import_with_the_right_spelling(
    decorator: Callable[..., object], spelling: str
) -> None:
    with pytest.raises(DeclarationError) as info:
        decorator(job)
    message = str(info.value)
    assert "needs its expression in parentheses" in message
    assert f"write {spelling} above {__name__}.job (" in message
    assert "test_declaration_mistakes.py:" in message


def test_a_decorator_refuses_an_expression_that_never_fires() -> None:
    with pytest.raises(DeclarationError, match=r"'0 2 31 2 \*' never fires: no date matches it"):
        tickwork.cron("0 2 31 2 *")(job)
    with pytest.raises(DeclarationError, match=r"'\*-02-30 12:00' never fires"):
        tickwork.calendar("*-02-30 12:00")(job)


def test_a_once_time_in_the_past_is_not_taken_for_one_that_never_fires() -> None:
    tickwork.schedule("once", "2001-01-01T00:00:00Z", name="mistakes.past-once")(job)


def test_jobs_add_refuses_an_expression_that_never_fires_even_disabled(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "jobs", "add", "fine", "0 2 * * *", "mistake_tasks:backup")[0] == 0
    for extra in ([], ["--disabled"]):
        code, out, err = cli(capsys, "jobs", "add", "x", "0 2 31 2 *", "mistake_tasks:backup", *extra)
        assert (code, out) == (2, "")
        assert err == (
            "tickwork: error: cron '0 2 31 2 *' never fires: no date matches it "
            "(is a day of the month past the end of every month it allows?)\n"
        )
    assert cli(capsys, "jobs", "list", "--json")[1].count("\n") == 1  # "fine" alone


def test_a_schedule_file_with_an_expression_that_never_fires_is_refused(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    assert cli(capsys, "jobs", "add", "kept", "0 2 * * *", "mistake_tasks:backup")[0] == 0
    (workdir / "jobs.jsonl").write_text(
        '{"name": "fine", "expression": "0 2 * * *", "target": "mistake_tasks:backup"}\n'
        '{"name": "never", "expression": "0 0 30 2 *", "target": "mistake_tasks:backup"}\n'
    )
    code, out, err = cli(capsys, "jobs", "add", "--from", "jobs.jsonl")
    assert (code, out) == (2, "")
    assert "jobs.jsonl:2" in err and "never fires" in err
    assert cli(capsys, "jobs", "list", "--json")[1].count("\n") == 1  # "kept" alone: none of the file


def test_a_cron_looking_expression_with_the_wrong_field_count_says_so() -> None:
    for expression, count in (("0 2 * *", 4), ("0 0 2 * * * * *", 8)):
        with pytest.raises(TriggerError, match=f"looks like cron but has {count} fields; cron takes 5"):
            detect_kind(expression)
    with pytest.raises(TriggerError, match="cannot tell the kind of 'every 5 minutes'"):
        detect_kind("every 5 minutes")


def test_did_you_mean_for_zones_targets_schedules_executors_and_plugins(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    with pytest.raises(TriggerError, match=r"unknown IANA zone 'europe/oslo' \(did you mean 'Europe/Oslo'\?\)"):
        check_zone("europe/oslo")
    target = cli(capsys, "jobs", "add", "backup", "0 2 * * *", "mistake_tasks:bakup")
    assert target[0] == 2
    assert "module 'mistake_tasks' has no attribute 'bakup' (did you mean 'backup'?)" in target[2]
    module = cli(capsys, "jobs", "add", "backup", "0 2 * * *", "mistake_taks:backup")
    assert module[0] == 2
    assert "No module named 'mistake_taks' (did you mean 'mistake_tasks'?)" in module[2]
    assert cli(capsys, "jobs", "add", "backup", "0 2 * * *", "mistake_tasks:backup")[0] == 0
    for command in (["jobs", "show", "bakup"], ["jobs", "trigger", "bakup"], ["jobs", "disable", "bakup"]):
        code, _, err = cli(capsys, *command)
        assert (code, err) == (1, "tickwork: error: no schedule named 'bakup' (did you mean 'backup'?)\n")
    executor = cli(capsys, "jobs", "add", "y", "0 2 * * *", "mistake_tasks:backup", "--executor", "lcoal")
    assert "unknown executor plugin 'lcoal' (did you mean 'local'?)" in executor[2]
    with pytest.raises(PluginNotFoundError, match=r"unknown store plugin 'sqlit' \(did you mean 'sqlite'\?\)"):
        tickwork.connect({"store": {"plugin": "sqlit"}}).list()
    zone = cli(capsys, "next", "0 9 * * *", "--tz", "Europe/Berln")
    assert "(did you mean 'Europe/Berlin'?)" in zone[2]


def test_a_job_module_that_declares_nothing_is_a_warning_in_the_banner(workdir: Path) -> None:
    (workdir / "empty_jobs.py").write_text("import tickwork\n\n\ndef forgotten() -> None:\n    pass\n")
    (workdir / "tickwork.toml").write_text(
        textwrap.dedent(
            """
            [scheduler]
            jobs = ["empty_jobs"]
            [store]
            plugin = "sqlite"
            path = "node.db"
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "tickwork.cli", "run", "--for", "0.5"],
        cwd=workdir,
        env=dict(os.environ, PYTHONPATH=str(workdir)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1, done.stderr
    assert "job module empty_jobs (scheduler.jobs) declares no jobs" in warnings[0]


def test_blocking_a_plugin_no_one_installed_is_a_warning_with_the_closest_name(workdir: Path) -> None:
    (workdir / "tickwork.toml").write_text('[plugins]\nblock = ["metrcs"]\n[store]\nplugin = "sqlite"\npath = "b.db"\n')
    done = subprocess.run(
        [sys.executable, "-m", "tickwork.cli", "next", "5m"],
        cwd=workdir,
        env={k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "[plugins] block lists 'metrcs', which no installed plugin is called (did you mean 'metrics'?)"
    ]


def test_a_misspelt_command_action_or_choice_gets_the_closest_one(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, hint in (
        (["jbos", "list"], "(did you mean 'jobs'?)"),
        (["jobs", "lsit"], "(did you mean 'list'?)"),
        (["jobs", "add", "x", "5m", "mistake_tasks:backup", "--misfire", "skp"], "(did you mean 'skip'?)"),
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].endswith(hint)
