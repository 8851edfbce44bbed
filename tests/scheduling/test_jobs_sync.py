"""Declaring jobs with decorators and syncing them into the store (docs/deployment-sync.md)."""

from __future__ import annotations

import functools
from dataclasses import replace
from datetime import timedelta

import pytest

import tickwork
from tests.support.stores import T0
from tickwork import schedules as admin
from tickwork.errors import DeclarationError
from tickwork.scheduling.declare import DeclaredJob, declared_in
from tickwork.sql.store import SQLStore
from tickwork.structures import ScheduleSpec
from tickwork.testing import FakeClock

MODULE = "tests.support.declared_jobs"


def test_decorator_declares_a_schedule_with_defaults_and_options() -> None:
    jobs = {j.spec.name: j.spec for j in declared_in(MODULE)}
    five = jobs["tests.support.declared_jobs.five_minutes"]
    assert five.trigger_kind == "cron" and five.expression == "*/5 * * * *"
    assert five.target == "tests.support.declared_jobs:five_minutes" and five.module == MODULE
    assert five.timeout == timedelta(minutes=5) and five.timezone == "UTC"
    assert jobs["hourly-report"].timeout == timedelta(seconds=30)


def test_a_job_with_parameters_is_a_declaration_error_naming_it() -> None:
    with pytest.raises(
        DeclarationError,
        match=r"needs_args \(tests/scheduling/test_jobs_sync\.py:\d+\): a declared job must take no parameters.*\(x\)",
    ):

        @tickwork.cron("* * * * *")
        def needs_args(x: int) -> None:
            pass


def test_a_bad_expression_is_a_declaration_error_naming_the_function() -> None:
    with pytest.raises(
        DeclarationError,
        match=r"bad_expr \(tests/scheduling/test_jobs_sync\.py:\d+\): invalid cron expression '61 \* \* \* \*'",
    ):

        @tickwork.cron("61 * * * *")
        def bad_expr() -> None:
            pass


def test_a_nested_function_cannot_be_a_job() -> None:
    with pytest.raises(DeclarationError, match="must be a module-level function"):

        @tickwork.cron("* * * * *")
        def nested() -> None:
            pass


def test_unimportable_job_module_is_reported() -> None:
    with pytest.raises(DeclarationError, match=r"cannot import job module 'no\.such\.module'"):
        declared_in("no.such.module")


def test_sync_creates_keeps_updates_and_removes(sqlite_store: SQLStore, clock: FakeClock) -> None:
    jobs = declared_in(MODULE)
    report = admin.sync_module(sqlite_store, MODULE, jobs)
    assert sorted(report.created) == ["hourly-report", "tests.support.declared_jobs.five_minutes"]
    five = sqlite_store.get("tests.support.declared_jobs.five_minutes")
    assert five.next_fire == T0 + timedelta(minutes=5)

    # A restart later: unchanged schedules keep their next fire time (no double fire).
    clock.advance(600)
    report = admin.sync_module(sqlite_store, MODULE, jobs)
    assert sorted(report.unchanged) == ["hourly-report", "tests.support.declared_jobs.five_minutes"]
    assert sqlite_store.get("tests.support.declared_jobs.five_minutes").next_fire == T0 + timedelta(minutes=5)

    # A changed timeout keeps the fire time; a changed trigger recomputes it from now.
    changed = [
        DeclaredJob(replace(j.spec, timeout=timedelta(seconds=9)), j.function)
        if j.spec.name == "hourly-report"
        else DeclaredJob(replace(j.spec, expression="*/7 * * * *"), j.function)
        for j in jobs
    ]
    report = admin.sync_module(sqlite_store, MODULE, changed)
    assert sorted(report.updated) == ["hourly-report", "tests.support.declared_jobs.five_minutes"]
    assert sqlite_store.get("hourly-report").next_fire == T0 + timedelta(hours=1)
    assert sqlite_store.get("hourly-report").spec.timeout == timedelta(seconds=9)
    assert sqlite_store.get("tests.support.declared_jobs.five_minutes").next_fire == T0 + timedelta(minutes=14)

    # Disabled from the CLI: a redeploy does not re-enable it.
    admin.set_enabled(sqlite_store, "hourly-report", False)
    admin.sync_module(sqlite_store, MODULE, changed)
    assert not sqlite_store.get("hourly-report").spec.enabled

    # No longer declared: removed. Run-time schedules are never touched by a sync.
    admin.add(sqlite_store, ScheduleSpec(name="cli-job", trigger_kind="cron", expression="* * * * *", target="m:f"))
    report = admin.sync_module(sqlite_store, MODULE, changed[:1])
    assert len(report.removed) == 1
    assert {s.name for s in sqlite_store.list_schedules()} == {changed[0].spec.name, "cli-job"}


def test_sync_refuses_to_take_over_a_name_used_elsewhere(sqlite_store: SQLStore) -> None:
    (job, *_) = declared_in(MODULE)
    admin.add(sqlite_store, replace(job.spec, module=None, target="other:thing"))
    with pytest.raises(DeclarationError, match="already used by the CLI"):
        admin.sync_module(sqlite_store, MODULE, [job])


def test_a_wrapper_naming_parameters_is_judged_by_the_signature_it_names() -> None:
    def needs(x: int) -> None:
        pass

    with pytest.raises(DeclarationError, match=r"needs \(.*\): a declared job must take no parameters.*\(x\)"):

        @tickwork.cron("* * * * *")
        @functools.wraps(needs)
        def wrapper() -> None:
            pass


def test_declarations_without_options_each_get_their_own_arguments() -> None:
    specs = [j.spec for j in declared_in(MODULE) if not j.spec.arguments]
    assert len(specs) >= 2
    assert len({id(s.arguments) for s in specs}) == len(specs)
