"""Schedule versions through the admin API on SQLite, PostgreSQL and MySQL: who wrote each change
(``by``), a pause makes none, a declaration's sync writes versions by ``"code"``, a revert is a new
version through ``Admin.update`` (fenced like it), and each run records the version it fired under."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import tickwork
from tests.support.servers.configs import BACKENDS, ConfigFor
from tickwork.errors import ConfigError, TickworkError
from tickwork.scheduling import sync
from tickwork.scheduling.declare import declared_in
from tickwork.structures import Finish, Outcome, RunStatus, ScheduleState

RECORD = "tests.support.jobs_for_tests:record"
MODULE = "tests.support.declared_jobs"


@pytest.fixture(params=BACKENDS)
def config(request: pytest.FixtureRequest, config_for: ConfigFor) -> dict[str, Any]:
    return config_for(request.param, migrated=True).as_dict()


def test_writes_are_versions_by_their_author_and_a_pause_is_none(config: dict[str, Any]) -> None:
    with tickwork.connect(config) as admin:
        added = admin.add("report", "0 6 * * *", RECORD, by="alice")
        assert added.version == 1 and added.as_json()["version"] == 1
        admin.update("report", retries=2, by="bob")
        admin.pause("report", "db migration", by="carol")
        admin.resume("report")
        admin.update("report", retries=2, by="dave")  # no change: no version
        versions = admin.versions("report")
        assert [(v.version, v.by) for v in versions] == [(1, "alice"), (2, "bob")]
        assert versions[1].changes == {"retries": {"old": 0, "new": 2}}
        assert admin.get("report").version == 2


def test_revert_restores_a_definition_as_a_new_version_and_keeps_the_state(config: dict[str, Any]) -> None:
    with tickwork.connect(config) as admin:
        admin.add("report", "0 6 * * *", RECORD, retries=1, by="alice")
        admin.update("report", expression="30 7 * * *", retries=3, timeout="90s", by="bob")
        admin.disable("report")
        reverted = admin.revert("report", 1, by="carol")
        assert reverted.version == 3 and not reverted.enabled  # disabled it stays
        assert (reverted.expression, reverted.retries, reverted.timeout) == ("0 6 * * *", 1, 300.0)
        latest = admin.versions("report")[-1]
        assert (latest.version, latest.by) == (3, "carol")
        assert latest.changes == {
            "expression": {"old": "30 7 * * *", "new": "0 6 * * *"},
            "timeout": {"old": 90.0, "new": 300.0},
            "retries": {"old": 3, "new": 1},
        }
        assert latest.definition == admin.versions("report")[0].definition
        # The current definition again: nothing changes, no version.
        assert admin.revert("report", 3).version == 3
        with pytest.raises(ConfigError, match=r"has no version 9; its versions are 1 to 3"):
            admin.revert("report", 9)


def test_a_revert_while_a_run_is_in_flight_leaves_the_run_alone(config: dict[str, Any]) -> None:
    with tickwork.connect(config) as admin:
        admin.add("report", "0 6 * * *", RECORD, by="alice")
        admin.update("report", retries=4, by="bob")
        admin.trigger("report")
        store = admin.store(write=True)
        (claim,) = store.claim_due("n1", limit=1, buckets=None)
        assert claim.version == 2
        before = store.get("report")
        admin.revert("report", 1, by="carol")
        during = store.get("report")
        assert (during.state, during.claimed_at, during.claim_seq) == (
            ScheduleState.RUNNING,
            before.claimed_at,
            before.claim_seq,
        )
        assert during.version == 3 and during.spec.retries == 0
        # The run ends under its fence and stays the run of the version it was claimed under.
        assert store.finish("n1", [Finish(claim, Outcome(RunStatus.SUCCEEDED), None)]) == [True]
        (run,) = admin.history(schedule="report")
        assert run.version == 2 and run.as_json()["version"] == 2


def test_a_declared_schedule_is_versioned_by_code_and_not_reverted(config: dict[str, Any]) -> None:
    jobs = declared_in(MODULE)
    with tickwork.connect(config) as admin:
        store = admin.store(write=True)
        sync.sync_module(store, MODULE, jobs)
        name = jobs[0].spec.name
        assert [(v.version, v.by) for v in admin.versions(name)] == [(1, "code")]
        sync.sync_module(store, MODULE, jobs)  # unchanged: no version
        retries = jobs[0].spec.retries
        changed = [replace(jobs[0], spec=replace(jobs[0].spec, retries=retries + 5)), *jobs[1:]]
        sync.sync_module(store, MODULE, changed)
        latest = admin.versions(name)[-1]
        assert (latest.version, latest.by) == (2, "code")
        assert latest.changes == {"retries": {"old": retries, "new": retries + 5}}
        assert [v.version for v in admin.versions(jobs[1].spec.name)] == [1]
        with pytest.raises(TickworkError, match="change the declaration"):
            admin.revert(name, 1)
