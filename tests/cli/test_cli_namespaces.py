"""The global ``--namespace`` option (before or after the command) and ``$TICKWORK_NAMESPACE``:
names are unique within a namespace, ``jobs list --json`` carries each schedule's namespace, ``*``
lists every namespace and refuses a write by name, ``jobs add --from`` entries may name theirs, and
``[namespaces.NAME] max_schedules`` refuses the add past it. Real ``tickwork`` commands (forked)
against SQLite, PostgreSQL and MySQL (docs/teams.md)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO

TARGET = "tests.support.jobs_for_tests:record"


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def workdir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "sqlite":
        store = 'plugin = "sqlite"\npath = "t.db"'
    else:
        store = f'plugin = "{request.param}"\nurl = "{request.getfixturevalue(f"{request.param}_url")}"'
    (tmp_path / "tickwork.toml").write_text(f"[store]\n{store}\n\n[namespaces.small]\nmax_schedules = 1\n")
    assert tw(tmp_path, "db", "upgrade").returncode == 0
    return tmp_path


def tw(cwd: Path, *args: str, namespace: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO)}
    if namespace is not None:
        env["TICKWORK_NAMESPACE"] = namespace
    done = run_tickwork(args, cwd=cwd, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def listed(cwd: Path, *args: str, namespace: str | None = None) -> list[tuple[str, str]]:
    done = tw(cwd, "jobs", "list", "--json", *args, namespace=namespace)
    assert done.returncode == 0, done.stderr
    return sorted((o["namespace"], o["name"]) for o in map(json.loads, done.stdout.splitlines()))


def test_one_name_in_two_namespaces_each_addressed_by_its_own(workdir: Path) -> None:
    assert tw(workdir, "--namespace", "a", "jobs", "add", "report", "0 3 * * *", TARGET).returncode == 0
    assert tw(workdir, "jobs", "add", "report", "0 4 * * *", TARGET, "--namespace", "b").returncode == 0
    taken = tw(workdir, "jobs", "add", "report", "0 5 * * *", TARGET, namespace="b")
    assert taken.returncode == 1 and "already exists" in taken.stderr
    assert listed(workdir) == []  # the default namespace holds none
    assert listed(workdir, namespace="b") == [("b", "report")]
    assert listed(workdir, "--namespace", "*") == [("a", "report"), ("b", "report")]
    every = tw(workdir, "jobs", "list", "--namespace", "*")  # piped: TSV, the name first
    assert sorted(line.split("\t")[0] for line in every.stdout.splitlines()) == ["a/report", "b/report"]
    shown = tw(workdir, "jobs", "show", "report", "--json", "--namespace", "a")
    assert json.loads(shown.stdout)["expression"] == "0 3 * * *"
    ambiguous = tw(workdir, "jobs", "show", "report", "--namespace", "*")
    assert ambiguous.returncode == 2 and "name one (--namespace NAME)" in ambiguous.stderr
    # The option wins over the environment.
    assert tw(workdir, "jobs", "remove", "report", "--namespace", "a", namespace="b").returncode == 0
    assert listed(workdir, "--namespace", "*") == [("b", "report")]
    bad = tw(workdir, "jobs", "list", "--namespace", "no spaces")
    assert bad.returncode == 2 and "namespace:" in bad.stderr


def test_schedule_files_name_their_namespace_and_max_schedules_refuses_past_it(workdir: Path) -> None:
    (workdir / "s.jsonl").write_text(
        json.dumps({"name": "x", "expression": "0 3 * * *", "target": TARGET, "namespace": "team-a"})
        + "\n"
        + json.dumps({"name": "x", "expression": "0 3 * * *", "target": TARGET})
        + "\n"
    )
    assert tw(workdir, "jobs", "add", "--from", "s.jsonl", namespace="team-b").returncode == 0
    assert listed(workdir, "--namespace", "*") == [("team-a", "x"), ("team-b", "x")]
    assert tw(workdir, "jobs", "add", "one", "0 3 * * *", TARGET, "--namespace", "small").returncode == 0
    refused = tw(workdir, "jobs", "add", "two", "0 3 * * *", TARGET, "--namespace", "small")
    assert refused.returncode == 1
    assert "[namespaces.small] max_schedules = 1" in refused.stderr
    assert listed(workdir, namespace="small") == [("small", "one")]


def test_remove_from_a_file_acts_in_the_commands_namespace_and_refuses_another(workdir: Path) -> None:
    assert tw(workdir, "jobs", "add", "report", "0 3 * * *", TARGET).returncode == 0  # in default
    assert tw(workdir, "jobs", "add", "report", "0 4 * * *", TARGET, namespace="b").returncode == 0
    listing = workdir / "gone.jsonl"
    listing.write_text(json.dumps({"name": "report", "namespace": "b"}) + "\n")
    # Read in default, the entry of b is refused: not taken as default's schedule of that name.
    refused = tw(workdir, "jobs", "remove", "--from", str(listing))
    assert refused.returncode == 2 and "namespace 'b', not this command's 'default'" in refused.stderr
    assert listed(workdir) == [("default", "report")]
    # In b, it removes b's, and default's stays.
    assert tw(workdir, "jobs", "remove", "--from", str(listing), namespace="b").returncode == 0
    assert listed(workdir, "--namespace", "*") == [("default", "report")]
