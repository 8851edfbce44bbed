"""``tickwork apply FILE... [--plan] [--prune]`` in real (forked) processes on SQLite, PostgreSQL
and MySQL: the plan's words, its exit status as ``terraform plan -detailed-exitcode`` (0 nothing
to do, 2 changes or drift, 1 an error, usage errors included), ``--json``, and drift naming who
changed a schedule since the last apply."""

from __future__ import annotations

import getpass
import json
import subprocess
from pathlib import Path

import pytest

from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO
from tests.support.servers.configs import BACKENDS, ConfigFor

RECORD = "tests.support.jobs_for_tests:record"

FILE = f"""\
[[schedule]]
name = "nightly"
expression = "0 3 * * *"
target = "{RECORD}"

[[schedule]]
name = "poll"
expression = "*/5 * * * *"
target = "{RECORD}"
timeout = "10m"
"""


def tw(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_tickwork(args, cwd=cwd, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(params=BACKENDS)
def workdir(request: pytest.FixtureRequest, config_for: ConfigFor, tmp_path: Path) -> Path:
    (tmp_path / "tickwork.toml").write_text(config_for(request.param, migrated=True).toml())
    (tmp_path / "schedules.toml").write_text(FILE)
    return tmp_path


def test_plan_apply_and_the_exit_statuses(workdir: Path) -> None:
    plan = tw(workdir, "apply", "schedules.toml", "--plan")
    assert plan.returncode == 2, plan.stderr
    assert plan.stdout.splitlines() == [
        f"+ nightly: add '0 3 * * *' -> {RECORD}",
        f"+ poll: add '*/5 * * * *' -> {RECORD}",
        "plan (namespace default): 2 to add, 0 to change, 0 to remove, 0 to record as applied",
    ]
    done = tw(workdir, "apply", "schedules.toml")
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.splitlines()[-1]
        == "applied (namespace default): 2 added, 0 changed, 0 removed, 0 recorded as applied"
    )
    clean = tw(workdir, "apply", "--plan", "schedules.toml")
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout == "nothing to do (namespace default): 2 unchanged, 0 declared in code\n"
    # Errors exit 1, not 2 (which says "changes"): a missing file, a bad entry, a bad option.
    missing = tw(workdir, "apply", "--plan", "nope.toml")
    assert missing.returncode == 1 and "nope.toml: cannot read the schedule file" in missing.stderr
    (workdir / "bad.jsonl").write_text(json.dumps({"name": "x", "expression": "not cron", "target": RECORD}) + "\n")
    bad = tw(workdir, "apply", "--plan", "bad.jsonl")
    assert bad.returncode == 1 and bad.stderr.startswith("tickwork: error: bad.jsonl:1: ")
    assert tw(workdir, "apply", "--plan", "--bogus", "schedules.toml").returncode == 1
    assert tw(workdir, "apply", "--plan", "schedules.toml", "schedules.toml").returncode == 1  # names twice


def test_drift_is_shown_with_who_and_what_and_fails_the_plan(workdir: Path) -> None:
    assert tw(workdir, "apply", "schedules.toml").returncode == 0
    assert tw(workdir, "jobs", "update", "poll", "--retries", "2").returncode == 0
    assert tw(workdir, "jobs", "add", "stray", "0 1 * * *", RECORD).returncode == 0
    plan = tw(workdir, "apply", "--plan", "--prune", "schedules.toml")
    assert plan.returncode == 2, plan.stderr
    lines = plan.stdout.splitlines()
    user = getpass.getuser()
    assert lines[:3] == ["~ poll: change (next fire kept)", "    retries: 2 -> 0", lines[2]]
    assert lines[2].startswith(f"  ! drift: changed since the last apply (version 1) by {user} at ")
    assert lines[2].endswith("(version 2)")
    assert lines[3:5] == ["      version 2: retries: 0 -> 2", "- stray: remove (no file names it; --prune)"]
    assert lines[-1].endswith("; 1 drifted since the last apply")
    as_json = json.loads(tw(workdir, "apply", "--plan", "--prune", "schedules.toml", "--json").stdout)
    assert as_json["pending"] and as_json["remove"] == ["stray"] and not as_json["applied"]
    (drift,) = as_json["drift"]
    assert drift["name"] == "poll" and [v["by"] for v in drift["changed_by"]] == [user]
    shown = json.loads(tw(workdir, "jobs", "show", "poll", "--json").stdout)
    assert (shown["version"], shown["applied_version"], shown["drift"]) == (2, 1, True)
    assert tw(workdir, "apply", "--prune", "schedules.toml").returncode == 0
    assert tw(workdir, "apply", "--plan", "--prune", "schedules.toml").returncode == 0
    listed = [json.loads(line)["name"] for line in tw(workdir, "jobs", "list", "--json").stdout.splitlines()]
    assert sorted(listed) == ["nightly", "poll"]
    versions = [json.loads(line) for line in tw(workdir, "jobs", "versions", "poll", "--json").stdout.splitlines()]
    assert [v["by"] for v in versions] == [f"apply:{user}", user, f"apply:{user}"]
