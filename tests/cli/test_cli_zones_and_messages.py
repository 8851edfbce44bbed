"""Times and messages of the CLI where a failing schedule must stand out (issue #41 §3): pause and
health reasons in the schedule's zone (UTC beside it, whole seconds), ``jobs backfill`` reading a
time without an offset in the schedule's zone and ages (``--from 2d``), ``history`` of several
schedules, the node's stop line naming ``-c FILE``, no database created before a job module
fails to import, and "did you mean" for a declared job's mistyped executor."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import tickwork
from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO
from tickwork.cli import main
from tickwork.config import load
from tickwork.node import Node
from tickwork.structures import parse_iso

RECORD = "tests.support.jobs_for_tests:record"
#: No microseconds: a time for people ends in whole seconds.
MICROSECONDS = re.compile(r"\d{2}:\d{2}:\d{2}\.\d+")


def out_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_backfill_reads_a_time_without_offset_in_the_schedules_zone(
    sqlite_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tickwork.connect() as admin:
        admin.add("oslo-nine", "0 9 * * *", RECORD, tz="Europe/Oslo")
    # 09:00 in Oslo (CET, UTC+1) is 08:00Z: read as UTC, the range would start an hour after the
    # first fire and leave it out.
    shown = json.loads(
        out_of(capsys, "--json", "jobs", "backfill", "oslo-nine", "--from", "2025-01-10T09:00", "--to",
               "2025-01-12T09:00", "--dry-run")
    )  # fmt: skip
    assert [parse_iso(t) for t in shown["times"]] == [
        datetime(2025, 1, 10, 8, 0, tzinfo=UTC),
        datetime(2025, 1, 11, 8, 0, tzinfo=UTC),
    ]
    # An offset given is kept as given.
    given = json.loads(
        out_of(capsys, "--json", "jobs", "backfill", "oslo-nine", "--from", "2025-01-10T09:00Z", "--to",
               "2025-01-12T09:00Z", "--dry-run")
    )  # fmt: skip
    assert [parse_iso(t) for t in given["times"]] == [
        datetime(2025, 1, 11, 8, 0, tzinfo=UTC),
        datetime(2025, 1, 12, 8, 0, tzinfo=UTC),
    ]
    # The dry run lists the fire times in the schedule's zone, UTC beside them.
    listed = out_of(capsys, "jobs", "backfill", "oslo-nine", "--from", "2025-01-10T09:00", "--to", "2025-01-11T00:00",
                    "--dry-run")  # fmt: skip
    assert listed.splitlines()[0] == "2025-01-10 09:00 Europe/Oslo (08:00Z)  would run"


def test_backfill_accepts_ages_and_ends_now_by_default(
    sqlite_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tickwork.connect() as admin:
        admin.add("hourly", "0 * * * *", RECORD)
        before = admin.store().now()
    shown = json.loads(out_of(capsys, "--json", "jobs", "backfill", "hourly", "--from", "2d", "--dry-run"))
    times = [parse_iso(t) for t in shown["times"]]
    # [now - 2 days, now): exactly 48 whole hours, whatever the minute now is.
    assert len(times) == 48 and all(t.minute == 0 and t.second == 0 for t in times)
    assert before - timedelta(days=2, seconds=5) <= times[0] and times[-1] < before + timedelta(seconds=5)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["jobs", "backfill", "hourly", "--from", "yesterday"])
    assert exited.value.code == 2
    assert "not an ISO-8601 time or an age like 30m, 2h, 3d: 'yesterday'" in capsys.readouterr().err


def test_a_pause_is_shown_in_the_schedules_zone_without_microseconds(
    sqlite_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tickwork.connect() as admin:
        admin.add("tokyo", "0 9 * * *", RECORD, tz="Asia/Tokyo")
    said = out_of(capsys, "jobs", "pause", "tokyo", "--note", "vendor outage", "--until", "2030-01-02T09:30")
    assert said == "paused tokyo until 2030-01-02 09:30 Asia/Tokyo (00:30Z)\n"
    shown = out_of(capsys, "jobs", "show", "tokyo")
    [paused] = [line for line in shown.splitlines() if line.startswith("paused:")]
    assert "'vendor outage'" in paused and " Asia/Tokyo (" in paused and "until 2030-01-02 09:30 Asia/Tokyo" in paused
    assert not MICROSECONDS.search(shown), shown
    with tickwork.connect() as admin:
        pause = admin.get("tokyo").pause
    assert pause is not None and pause.until == datetime(2030, 1, 2, 0, 30, tzinfo=UTC)


def test_health_reasons_are_in_the_schedules_zone_without_microseconds(
    sqlite_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with tickwork.connect() as admin:
        admin.add("tokyo", "0 9 * * *", RECORD, tz="Asia/Tokyo")
        admin.trigger("tokyo")
    node = Node(load(None))
    node.open()
    try:
        node.engine.tick()
    finally:
        node.shutdown()
    with tickwork.connect() as admin:
        info = admin.get("tokyo")
        [run] = admin.history(schedule="tokyo", limit=1)
    assert info.health is not None and run.finished_at is not None
    ended = run.finished_at.astimezone(UTC)
    local = ended.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Tokyo"))
    assert info.health.reason == (
        f"last success at {local:%Y-%m-%d %H:%M:%S} Asia/Tokyo ({ended:%H:%M:%S}Z)"
        if local.date() == ended.date()
        else f"last success at {local:%Y-%m-%d %H:%M:%S} Asia/Tokyo ({ended:%Y-%m-%d %H:%M:%S}Z)"
    )
    assert f"({info.health.reason})" in out_of(capsys, "jobs", "show", "tokyo")
    out_of(capsys, "jobs", "disable", "tokyo")
    with tickwork.connect() as admin:
        reason = admin.get("tokyo").health.reason  # type: ignore[union-attr]
    assert reason.startswith("disabled; last success at ") and " Asia/Tokyo (" in reason
    assert not MICROSECONDS.search(reason)


def test_history_of_several_schedules_shows_each(sqlite_project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with tickwork.connect() as admin:
        for name in ("a", "b", "c"):
            admin.add(name, "0 3 * * *", RECORD)
            admin.trigger(name)
    node = Node(load(None))
    node.open()
    try:
        node.engine.tick()
    finally:
        node.shutdown()
    rows = [json.loads(line) for line in out_of(capsys, "--json", "history", "--schedule", "a", "--schedule", "c")
            .splitlines()]  # fmt: skip
    assert sorted(r["schedule"] for r in rows) == ["a", "c"]
    one = out_of(capsys, "--json", "history", "--schedule", "b", "--limit", "5").splitlines()
    assert [json.loads(line)["schedule"] for line in one] == ["b"]
    capsys.readouterr()
    assert main(["history", "--schedule", "a", "--schedule", "nope"]) != 0
    assert "'nope'" in capsys.readouterr().err


def tickwork_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{cwd}"}
    env.pop("TICKWORK_CONFIG", None)
    return run_tickwork(args, cwd=cwd, env=env)


def test_the_stop_line_names_the_config_file_it_was_given(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "node.toml").write_text(
        f'[scheduler]\nnode_id = "n1"\n[store]\nplugin = "sqlite"\npath = "{tmp_path / "t.db"}"\n'
    )
    given = tickwork_cli(tmp_path, "-c", "conf/node.toml", "run", "--for", "0.3")
    assert given.returncode == 0, given.stderr
    assert "every run is in the history (tickwork history -c conf/node.toml --node n1)" in given.stderr
    # The file the CLI finds by itself needs no -c.
    (tmp_path / "tickwork.toml").write_text((tmp_path / "conf" / "node.toml").read_text())
    found = tickwork_cli(tmp_path, "run", "--for", "0.3")
    assert found.returncode == 0, found.stderr
    assert "every run is in the history (tickwork history --node n1)" in found.stderr


def test_no_database_is_created_before_a_job_module_fails_to_import(tmp_path: Path) -> None:
    (tmp_path / "broken_jobs.py").write_text("import a_module_that_is_not_installed\n")
    (tmp_path / "tickwork.toml").write_text(
        '[scheduler]\njobs = ["broken_jobs"]\n[store]\nplugin = "sqlite"\npath = "t.db"\n'
    )
    done = tickwork_cli(tmp_path, "run", "--for", "0.3")
    assert done.returncode != 0
    assert "cannot import job module 'broken_jobs'" in done.stderr
    assert not (tmp_path / "t.db").exists()


def test_a_declared_jobs_mistyped_executor_gets_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "typo_jobs.py").write_text(
        'import tickwork\n\n@tickwork.every("1m", name="a", executor="locl")\ndef a() -> None:\n    pass\n'
    )
    (tmp_path / "tickwork.toml").write_text(
        '[scheduler]\njobs = ["typo_jobs"]\n[store]\nplugin = "sqlite"\npath = "t.db"\n'
    )
    done = tickwork_cli(tmp_path, "run", "--for", "0.3")
    assert done.returncode != 0
    assert "unknown executor 'locl' (did you mean 'local'?)" in done.stderr
    assert not (tmp_path / "t.db").exists()  # refused before the database, like an import error
