"""What the CLI and the node say to people: a zoned schedule's times in its own zone with UTC
beside them (``jobs add / update / trigger / show / list``, the node's banner), and a schedule
parked because the nodes do not run its executor, with the fix spelled out."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.forkedcli import run_tickwork
from tickwork.scheduling.localtime import local_time

JOBS = """
import tickwork


def backup() -> None:
    pass


@tickwork.cron("30 6 * * *", tz="Asia/Kolkata", name="zoned.report")
def report() -> None:
    pass
"""


def tickwork(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKWORK_") and k != "COLUMNS"}
    return run_tickwork(args, cwd=workdir, env=dict(env, PYTHONPATH=str(workdir)), timeout=60)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "words_jobs.py").write_text(JOBS)
    (tmp_path / "tickwork.toml").write_text('[store]\nplugin = "sqlite"\npath = "w.db"\n')
    return tmp_path


def test_local_time_shows_the_zone_first_and_utc_beside_it() -> None:
    assert (
        local_time(datetime(2026, 11, 27, 1, 0, tzinfo=UTC), "Europe/Oslo") == "2026-11-27 02:00 Europe/Oslo (01:00Z)"
    )
    # The UTC date is added when it is not the local one; seconds only when there are some.
    assert (
        local_time(datetime(2026, 11, 26, 23, 30, 15, tzinfo=UTC), "Europe/Oslo")
        == "2026-11-27 00:30:15 Europe/Oslo (2026-11-26 23:30:15Z)"
    )
    assert local_time(datetime(2026, 7, 1, 12, 0, tzinfo=UTC), "UTC") == "2026-07-01 12:00Z"
    assert local_time(None, "Europe/Oslo") == "-"


def test_every_command_answers_in_the_schedules_zone(workdir: Path) -> None:
    added = tickwork(workdir, "jobs", "add", "backup", "0 2 * * *", "words_jobs:backup", "--tz", "Europe/Oslo")
    assert added.returncode == 0, added.stderr
    stored = json.loads(tickwork(workdir, "jobs", "show", "backup", "--json").stdout)
    fire = datetime.fromisoformat(stored["next_fire"])
    shown = local_time(fire, "Europe/Oslo")
    assert shown.startswith(f"{fire.astimezone(UTC):%Y}") and " 02:00 Europe/Oslo (" in shown
    assert added.stdout == f"added backup; next fire {shown}\n"
    assert f"next fire:   {shown}\n" in tickwork(workdir, "jobs", "show", "backup").stdout
    listed = tickwork(workdir, "jobs", "list").stdout.split("\t")
    assert listed[4] == shown
    updated = tickwork(workdir, "jobs", "update", "backup", "--expression", "0 3 * * *", "--tz", "America/Chicago")
    fire = datetime.fromisoformat(json.loads(tickwork(workdir, "jobs", "show", "backup", "--json").stdout)["next_fire"])
    assert updated.stdout == f"updated backup; next fire {local_time(fire, 'America/Chicago')}\n"
    assert " 03:00 America/Chicago (" in updated.stdout
    triggered = tickwork(workdir, "jobs", "trigger", "backup")
    assert triggered.stdout.startswith("triggered backup; due ") and "America/Chicago (" in triggered.stdout
    utc = tickwork(workdir, "jobs", "add", "plain", "0 2 * * *", "words_jobs:backup")
    assert utc.stdout.startswith("added plain; next fire 20") and utc.stdout.rstrip().endswith(" 02:00Z")


def test_the_banner_shows_a_zoned_job_in_its_zone(workdir: Path) -> None:
    (workdir / "tickwork.toml").write_text(
        '[scheduler]\njobs = ["words_jobs"]\n[store]\nplugin = "sqlite"\npath = "w.db"\n'
    )
    done = tickwork(workdir, "run", "--for", "0.5")
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "job zoned.report:" in line]
    assert line.split("tickwork.node:   ")[1].startswith("job zoned.report: cron '30 6 * * *' Asia/Kolkata, next fire ")
    assert line.endswith(" 06:30 Asia/Kolkata (01:00Z)")


def test_a_schedule_parked_for_an_executor_the_nodes_do_not_run_says_how_to_fix_it(workdir: Path) -> None:
    (workdir / "admin.toml").write_text(
        textwrap.dedent(
            """
            [store]
            plugin = "sqlite"
            path = "w.db"
            [executor.http]
            """
        )
    )
    added = tickwork(
        workdir, "jobs", "add", "hook", "1s", "https://example.invalid/hook", "--executor", "http", "-c", "admin.toml"
    )
    assert added.returncode == 0, added.stderr
    assert added.stderr == (
        "tickwork: note: no live node could be checked for executor 'http' (none is heartbeating); it was checked "
        "against admin.toml only: the nodes need an [executor.http] table in their own configuration, or they "
        "park schedules on it\n"
    )
    assert tickwork(workdir, "run", "--for", "2").returncode == 0  # tickwork.toml: no [executor.http]
    shown = tickwork(workdir, "jobs", "show", "hook").stdout.splitlines()
    node_fault = next(line for line in shown if line.startswith("why parked:"))
    assert "executor 'http' is not configured on node " in node_fault
    assert "state:       parked" in shown
    assert (
        "to fix:      add an [executor.http] table to the tickwork.toml of the nodes that run it, restart those "
        "nodes, then: tickwork jobs enable hook"
    ) in shown
    assert shown.index("state:       parked") + 1 == shown.index(node_fault)
