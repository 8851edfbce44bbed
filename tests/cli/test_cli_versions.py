"""``tickwork jobs versions NAME`` and ``tickwork jobs revert NAME --to N`` (in-process, on the
default SQLite store): the versions with who wrote them (the OS user) and what changed, a revert as a
new version, ``jobs show --json``'s ``version`` and ``history --json``'s ``version`` of each run."""

from __future__ import annotations

import getpass
import json

from tests.support.cli import Tickwork, error_of, run_due_once
from tests.support.cli import jobs_module as jobs_module  # the fixtures
from tests.support.cli import tw as tw
from tests.support.cli import workdir as workdir


def test_versions_list_each_change_by_the_os_user(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "tick", "*/10 * * * *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "update", "tick", "--retries", "2").code == 0
    assert tw("jobs", "disable", "tick").code == 0  # state: no version
    listed = tw("jobs", "versions", "tick")
    assert listed.code == 0, listed
    user = getpass.getuser()
    assert listed.lines[0].startswith("version 1  ") and listed.lines[0].endswith(f"by {user}")
    assert '  expression = "*/10 * * * *"' in listed.lines
    assert listed.lines[-2].startswith("version 2  ") and listed.lines[-2].endswith(f"by {user}  (current)")
    assert listed.lines[-1] == "  retries: 0 -> 2"
    objects = [json.loads(line) for line in tw("jobs", "versions", "tick", "--json").lines]
    assert [(o["version"], o["by"]) for o in objects] == [(1, user), (2, user)]
    assert objects[1]["changes"] == {"retries": {"old": 0, "new": 2}}
    assert json.loads(tw("jobs", "show", "tick", "--json").out)["version"] == 2
    assert "version:" in tw("jobs", "show", "tick").out


def test_revert_restores_a_version_as_a_new_one(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "tick", "*/10 * * * *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "update", "tick", "--expression", "0 * * * *", "--retries", "3").code == 0
    reverted = tw("jobs", "revert", "tick", "--to", "1")
    assert reverted.code == 0, reverted
    assert reverted.out.startswith("reverted tick;") and "(version 1's definition, now version 3)" in reverted.out
    shown = json.loads(tw("jobs", "show", "tick", "--json").out)
    assert (shown["expression"], shown["retries"], shown["version"]) == ("*/10 * * * *", 0, 3)
    latest = json.loads(tw("jobs", "versions", "tick", "--json").lines[-1])
    assert latest["changes"] == {
        "expression": {"old": "0 * * * *", "new": "*/10 * * * *"},
        "retries": {"old": 3, "new": 0},
    }
    again = tw("jobs", "revert", "tick", "--to", "3")
    assert again.code == 0 and "already has the definition of version 3" in again.err
    assert "has no version 7; its versions are 1 to 3" in error_of(tw("jobs", "revert", "tick", "--to", "7"), 2)
    assert "no schedule named 'tock'" in error_of(tw("jobs", "versions", "tock"), 1)


def test_history_json_carries_the_version_each_run_fired_under(tw: Tickwork, jobs_module: str) -> None:
    assert tw("jobs", "add", "tick", "0 0 1 1 *", f"{jobs_module}:ok").code == 0
    assert tw("jobs", "update", "tick", "--retries", "1").code == 0
    assert tw("jobs", "trigger", "tick").code == 0
    run_due_once()
    (run,) = [json.loads(line) for line in tw("history", "--json").lines]
    assert run["status"] == "succeeded" and run["version"] == 2
