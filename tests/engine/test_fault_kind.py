"""A missing executor is a typed error whose kind is stored with the fault it parks a schedule
with (``tickwork_schedules.fault_kind``): readers test the kind, never the fault's words."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from tests.support.cli import run_due_once, stored
from tests.support.forkedcli import run_tickwork
from tickwork import schedules as admin
from tickwork.admin.info import ScheduleInfo
from tickwork.cli import main
from tickwork.cli.commands.jobs_view import fix_for
from tickwork.errors import ExecutorNotConfigured, TriggerError
from tickwork.structures import FaultKind, ScheduleSpec, ScheduleState
from tickwork_sqlite.store import SQLiteStore

T = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_error_carries_the_executor_and_the_node() -> None:
    error = ExecutorNotConfigured("http", "n1")
    assert (error.executor, error.node) == ("http", "n1")
    assert str(error) == "executor 'http' is not configured on node n1"
    assert FaultKind.of(error) is FaultKind.EXECUTOR_NOT_CONFIGURED
    assert FaultKind.of(TriggerError("executor 'http' is not configured on node n1")) is FaultKind.ERROR


def info(fault: str, kind: FaultKind) -> ScheduleInfo:
    spec = ScheduleSpec(name="hook", trigger_kind="cron", expression="* * * * *", target="m:f", executor="http")
    return ScheduleInfo(spec, None, ScheduleState.IDLE, None, None, None, T, T, fault=fault, fault_kind=kind)


def test_the_fix_follows_the_kind_not_the_words() -> None:
    words = "ExecutorNotConfigured: executor 'http' is not configured on node n1"
    assert fix_for(info(words, FaultKind.EXECUTOR_NOT_CONFIGURED)).startswith("add an [executor.http] table")
    # The same words under another kind (a plugin's own error quoting them) get the general advice.
    assert fix_for(info(words, FaultKind.ERROR)).startswith("fix the cause above")
    assert fix_for(info("TriggerError: no such zone", FaultKind.EXECUTOR_NOT_CONFIGURED)).startswith("add an")


def tickwork(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKWORK_") and k != "COLUMNS"}
    return run_tickwork(args, cwd=workdir, env=env, timeout=60)


def test_a_node_parks_a_schedule_on_a_missing_executor_with_its_kind_and_the_cli_reads_it(
    sqlite_project: Path,
) -> None:
    store = SQLiteStore("tickwork.db")
    store.open()
    try:
        # The node of the default configuration runs the local executor only.
        admin.add(
            store,
            ScheduleSpec(name="hook", trigger_kind="cron", expression="* * * * * *", target="m:f", executor="http"),
        )
    finally:
        store.close()
    assert main(["jobs", "trigger", "hook"]) == 0  # due now
    run_due_once()
    parked = stored("hook")
    assert parked.fault_kind is FaultKind.EXECUTOR_NOT_CONFIGURED
    assert parked.fault is not None and "ExecutorNotConfigured" in parked.fault
    shown = json.loads(tickwork(sqlite_project, "jobs", "show", "hook", "--json").stdout)
    assert shown["fault_kind"] == "executor_not_configured"
    text = tickwork(sqlite_project, "jobs", "show", "hook").stdout
    assert "to fix:      add an [executor.http] table to the tickwork.toml of the nodes that run it" in text
    # A fix clears the kind with the fault.
    enabled = tickwork(sqlite_project, "jobs", "enable", "hook")
    assert enabled.returncode == 0, enabled.stderr
    assert (stored("hook").fault, stored("hook").fault_kind) == (None, None)
