"""Declared jobs and namespaces (docs/teams.md): a decorator may name its job's namespace; the
others get the node's ``[scheduler] namespace``; one name in two namespaces is two jobs, synced
(created, kept, removed) by namespace and name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tickwork.admin.api import load_config as load
from tickwork.errors import DeclarationError
from tickwork.node.jobsync import declared_jobs, sync_declared
from tickwork.plugin.assembly import build_executors
from tickwork.plugin.manager import plugin_manager_for
from tickwork.scheduling.declare import schedule
from tickwork_sqlite.store import SQLiteStore

MODULE = "tests.support.namespaced_jobs"


def test_the_nodes_namespace_goes_to_jobs_that_name_none(tmp_path: Path) -> None:
    config = load({"scheduler": {"jobs": [MODULE], "namespace": "ops"}})
    manager = plugin_manager_for(config)
    executors = build_executors(config, manager)
    store = SQLiteStore(str(tmp_path / "t.db"))
    store.open()
    try:
        (report,) = sync_declared(config, manager, store, executors)
        assert sorted(report.created) == ["nightly", "nightly"]
        assert sorted(s.key for s in store.list_schedules()) == [("billing", "nightly"), ("ops", "nightly")]
        assert store.get("nightly", namespace="billing").spec.trigger_kind == "interval"
        # A second start changes nothing; another node namespace moves the undecorated job.
        (again,) = sync_declared(config, manager, store, executors)
        assert (again.created, again.removed, sorted(again.unchanged)) == ([], [], ["nightly", "nightly"])
        moved = load({"scheduler": {"jobs": [MODULE], "namespace": "team"}})
        (report,) = sync_declared(moved, manager, store, executors, declared_jobs(moved, manager, executors))
        assert (report.created, report.removed) == (["nightly"], ["nightly"])
        assert sorted(s.key for s in store.list_schedules()) == [("billing", "nightly"), ("team", "nightly")]
    finally:
        store.close()


def job() -> None:
    pass


def test_a_bad_namespace_is_a_declaration_error_and_a_bad_node_namespace_a_config_error() -> None:
    with pytest.raises(DeclarationError, match="namespace: letters, digits"):
        schedule("cron", "0 3 * * *", name="x", namespace="no spaces")(job)
    with pytest.raises(Exception, match=r"scheduler\.namespace.*letters, digits"):
        load({"scheduler": {"namespace": "no/slash"}})
    with pytest.raises(Exception, match=r"scheduler\.namespaces.*letters, digits"):
        load({"scheduler": {"namespaces": ["ok", "not ok"]}})
