"""``history`` and ``check`` in a namespace (in-process, on the default SQLite store): each run's
``"namespace"`` in ``history --json``, ``--namespace`` and ``$TICKWORK_NAMESPACE`` choosing whose
runs and schedules are read, and ``'*'`` reading every namespace (docs/teams.md)."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import Tickwork, run_due_once
from tests.support.cli import jobs_module as jobs_module  # the fixtures
from tests.support.cli import tw as tw
from tests.support.cli import workdir as workdir


def test_history_and_check_read_their_namespace(
    tw: Tickwork, jobs_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for namespace in ("a", "b"):
        assert tw("jobs", "add", "tick", "0 0 1 1 *", f"{jobs_module}:ok", "--namespace", namespace).code == 0
        assert tw("--namespace", namespace, "jobs", "trigger", "tick").code == 0
    run_due_once()
    runs = [json.loads(line) for line in tw("history", "--json", "--namespace", "*").lines]
    assert sorted((r["namespace"], r["schedule"], r["status"]) for r in runs) == [
        ("a", "tick", "succeeded"),
        ("b", "tick", "succeeded"),
    ]
    only_b = [json.loads(line) for line in tw("history", "--json", "--namespace", "b").lines]
    assert [r["namespace"] for r in only_b] == ["b"]
    assert tw("history", "--json").lines == []  # default holds none
    monkeypatch.setenv("TICKWORK_NAMESPACE", "a")
    assert [json.loads(line)["namespace"] for line in tw("history", "--json").lines] == ["a"]
    checked = json.loads(tw("check", "--json").lines[-1])["summary"]
    assert checked["schedules"] == 1, checked
    everyone = json.loads(tw("check", "--json", "--namespace", "*").lines[-1])["summary"]
    assert everyone["schedules"] == 2, everyone
