"""Schedules as code through the admin API (``Admin.plan`` / ``Admin.apply``) on SQLite,
PostgreSQL and MySQL: what a plan lists (add, change field by field, remove with prune, declared
ones left alone, drift naming who changed a schedule and when), an apply that writes it in one
transaction or writes nothing when it fails part-way, state left alone, and a run in flight that
ends under its fence when apply changes or removes its schedule."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import pytest

import tickwork
from tests.support.servers.configs import BACKENDS, ConfigFor
from tickwork.abc import Store
from tickwork.errors import ConfigError, StoreError
from tickwork.scheduling import sync
from tickwork.scheduling.declare import declared_in
from tickwork.structures import Finish, Outcome, RunStatus, Schedule, SchedulePlan, ScheduleSpec

RECORD = "tests.support.jobs_for_tests:record"
MODULE = "tests.support.declared_jobs"


def entry(name: str, expression: str = "0 3 * * *", **options: Any) -> dict[str, Any]:
    return {"name": name, "expression": expression, "target": RECORD, **options}


@pytest.fixture(params=BACKENDS)
def config(request: pytest.FixtureRequest, config_for: ConfigFor) -> dict[str, Any]:
    return config_for(request.param, migrated=True).as_dict()


def test_a_plan_lists_what_apply_writes_and_then_nothing(config: dict[str, Any]) -> None:
    files = [entry("nightly"), entry("poll", "*/5 * * * *", timeout="10m")]
    with tickwork.connect(config) as admin:
        first = admin.plan(files, check_nodes=False)
        assert [s.name for s in first.add] == ["nightly", "poll"] and first.pending
        assert admin.names() == []  # a plan writes nothing
        done = admin.apply(files, check_nodes=False, by="alice")
        assert [s.name for s in done.add] == ["nightly", "poll"]
        shown = admin.get("poll")
        assert (shown.version, shown.applied_version, shown.drift, shown.timeout) == (1, 1, False, 600.0)
        assert admin.versions("poll")[0].by == "apply:alice"
        again = admin.plan(files, check_nodes=False)
        assert not again.pending and again.unchanged == ("nightly", "poll")
        assert again.as_json()["counts"]["unchanged"] == 2


def test_drift_names_who_changed_a_schedule_and_apply_puts_the_file_back(config: dict[str, Any]) -> None:
    files = [entry("nightly", retries=1)]
    with tickwork.connect(config) as admin:
        admin.apply(files, check_nodes=False, by="alice")
        admin.update("nightly", expression="0 4 * * *", by="bob")
        assert admin.get("nightly").drift
        plan = admin.plan(files, check_nodes=False)
        (change,) = plan.change
        assert change.fields == {"expression": {"old": "0 4 * * *", "new": "0 3 * * *"}} and change.retrigger
        (drift,) = plan.drift
        assert (drift.applied_version, drift.version) == (1, 2)
        ((by, changes),) = [(v.by, v.changes) for v in drift.versions]
        assert by == "bob" and changes == {"expression": {"old": "0 3 * * *", "new": "0 4 * * *"}}
        assert "bob at " in drift.who()
        admin.apply(files, check_nodes=False, by="alice")
        restored = admin.get("nightly")
        assert (restored.expression, restored.version, restored.applied_version) == ("0 3 * * *", 3, 3)
        assert not restored.drift and not admin.plan(files, check_nodes=False).pending


def test_drift_back_to_the_files_definition_is_recorded_as_applied(config: dict[str, Any]) -> None:
    files = [entry("nightly")]
    with tickwork.connect(config) as admin:
        admin.apply(files, check_nodes=False)
        admin.update("nightly", retries=2, by="bob")
        admin.update("nightly", retries=0, by="carol")
        plan = admin.plan(files, check_nodes=False)
        assert plan.change == () and plan.adopt == ("nightly",) and plan.pending
        assert [v.by for v in plan.drift[0].versions] == ["bob", "carol"]
        admin.apply(files, check_nodes=False)
        assert admin.get("nightly").applied_version == 3
        assert not admin.plan(files, check_nodes=False).pending


def test_a_schedule_added_otherwise_is_adopted_once(config: dict[str, Any]) -> None:
    with tickwork.connect(config) as admin:
        admin.add("nightly", "0 3 * * *", RECORD, check_nodes=False)
        plan = admin.plan([entry("nightly")], check_nodes=False)
        assert plan.adopt == ("nightly",) and plan.drift == ()  # never applied: no drift to name
        admin.apply([entry("nightly")], check_nodes=False)
        assert admin.get("nightly").applied_version == 1
        assert not admin.plan([entry("nightly")], check_nodes=False).pending


def test_prune_removes_unnamed_run_time_schedules_and_never_declared_ones(config: dict[str, Any]) -> None:
    with tickwork.connect(config) as admin:
        sync.sync_module(admin.store(write=True), MODULE, declared_in(MODULE))
        declared = admin.names()
        assert declared
        admin.add("stray", "0 1 * * *", RECORD, check_nodes=False)
        files = [entry("nightly"), entry(declared[0], "0 9 * * *")]
        without = admin.plan(files, check_nodes=False)
        assert without.remove == () and without.declared == ((declared[0], MODULE),)
        plan = admin.plan(files, prune=True, check_nodes=False)
        assert plan.remove == ("stray",)
        admin.apply(files, prune=True, check_nodes=False)
        assert sorted(admin.names()) == sorted([*declared, "nightly"])
        assert admin.get(declared[0]).expression != "0 9 * * *"  # the declaration's, untouched
        assert admin.get(declared[0]).applied_version is None


def test_apply_leaves_state_alone_and_says_so(config: dict[str, Any]) -> None:
    with tickwork.connect(config) as admin:
        admin.apply([entry("nightly")], check_nodes=False)
        admin.pause("nightly", "incident 42", by="bob")
        plan = admin.plan([entry("nightly", retries=2)], check_nodes=False)
        (note,) = plan.notes
        assert "disabled in the store (paused by bob: incident 42)" in note
        admin.apply([entry("nightly", retries=2)], check_nodes=False)
        after = admin.get("nightly")
        assert (after.enabled, after.retries) == (False, 2) and after.pause is not None
        added = admin.apply([entry("later", enabled=False)], check_nodes=False)
        assert [s.enabled for s in added.add] == [False] and not admin.get("later").enabled


def test_invalid_entries_and_repeated_names_write_nothing(config: dict[str, Any]) -> None:
    with tickwork.connect(config) as admin:
        with pytest.raises(ConfigError, match="more than once: a"):
            admin.apply([entry("a"), entry("a")], check_nodes=False)
        with pytest.raises(ConfigError):
            admin.apply([entry("a"), entry("b", "not cron")], check_nodes=False)
        with pytest.raises(ConfigError, match="name another namespace than this apply's 'default'"):
            admin.plan([{**entry("a"), "namespace": "team-b"}], check_nodes=False)
        with pytest.raises(ConfigError, match="namespace: letters"):
            admin.plan([entry("a")], namespace="two words", check_nodes=False)
        assert admin.names() == []


def test_an_apply_makes_one_namespace_what_its_files_say_and_leaves_the_others_alone(
    config: dict[str, Any],
) -> None:
    with tickwork.connect(config) as admin:
        admin.add("a", "0 3 * * *", RECORD, check_nodes=False)  # in default
        admin.apply([entry("a"), entry("b")], namespace="team-b", check_nodes=False)
        # Same name in another namespace: its own schedule; default's is untouched.
        plan = admin.plan([entry("b")], namespace="team-b", prune=True, check_nodes=False)
        assert plan.remove == ("a",) and plan.namespace == "team-b"
        admin.apply([entry("b")], namespace="team-b", prune=True, check_nodes=False)
    with tickwork.connect(config, namespace="team-b") as team_b:
        assert team_b.names() == ["b"]
    with tickwork.connect(config) as admin:
        assert admin.names() == ["a"]
        # Pruning default with a file that names nothing of it removes a, and nothing of team-b.
        admin.apply([entry("c")], prune=True, check_nodes=False)
        assert admin.names() == ["c"]
    with tickwork.connect(config, namespace="team-b") as team_b:
        assert team_b.names() == ["b"]


class FailingWrites:
    """A store whose batched write fails part-way: the ``fail_at``-th first fire it computes
    raises, after the statements before it ran in the same transaction. Every other call is the
    real store's."""

    def __init__(self, store: Store, fail_at: int) -> None:
        self._inner, self.fail_at = store, fail_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def write_schedules(
        self,
        plan: Callable[[Sequence[Schedule]], SchedulePlan],
        next_fire: Callable[[ScheduleSpec, datetime], datetime | None],
        *,
        by: str | None = None,
    ) -> SchedulePlan:
        calls = 0

        def failing(spec: ScheduleSpec, now: datetime) -> datetime | None:
            nonlocal calls
            calls += 1
            if calls == self.fail_at:
                raise StoreError("injected failure part-way through the apply")
            return next_fire(spec, now)

        return self._inner.write_schedules(plan, failing, by=by)


def test_an_apply_failing_part_way_leaves_the_store_as_it_was(
    config: dict[str, Any], config_for: ConfigFor, request: pytest.FixtureRequest
) -> None:
    with tickwork.connect(config) as admin:
        admin.apply([entry("kept", retries=1), entry("moved")], check_nodes=False, by="alice")
        admin.add("stray", "0 1 * * *", RECORD, check_nodes=False)
        before = {s.name: (s.spec, s.version, s.applied_version, s.next_fire) for s in admin.store().list_schedules()}
        versions = {name: admin.versions(name) for name in before}
        files = [
            *(entry(f"new-{i}") for i in range(5)),  # created first, their fires computed
            entry("kept", retries=2),  # changed, next fire kept
            entry("moved", "0 5 * * *"),  # retriggered: its first fire fails
        ]
        store = admin.store(write=True)
        failing = tickwork.Admin(admin.config, manager=admin.manager, store=FailingWrites(store, fail_at=6))  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="part-way"):
            failing.apply(files, prune=True, check_nodes=False, by="bob")
        after = {s.name: (s.spec, s.version, s.applied_version, s.next_fire) for s in admin.store().list_schedules()}
        assert after == before
        assert {name: admin.versions(name) for name in after} == versions


def test_a_run_in_flight_ends_under_its_fence_when_apply_changes_or_removes_its_schedule(
    config: dict[str, Any],
) -> None:
    with tickwork.connect(config) as admin:
        admin.apply([entry("a", "* * * * *"), entry("b", "* * * * *")], check_nodes=False)
        store = admin.store(write=True)
        for name in ("a", "b"):
            store.fire_now(name)
        claims = {c.spec.name: c for c in store.claim_due("n1", limit=10, buckets=None)}
        assert set(claims) == {"a", "b"}
        # a: a new trigger while its run is in flight; b: pruned.
        admin.apply([entry("a", "0 3 * * *")], prune=True, check_nodes=False)
        assert admin.names() == ["a"]
        held = store.get("a")
        assert (held.claimed_by, held.claim_seq) == ("n1", claims["a"].claim_seq)  # the claim stands
        ok = Outcome(RunStatus.SUCCEEDED)
        landed = store.finish("n1", [Finish(claims["a"], ok, None), Finish(claims["b"], ok, None)])
        assert landed[0] is True and not landed[1]  # b's schedule is gone: nothing to advance
        done = store.get("a")
        assert done.claimed_by is None and done.next_fire is not None and done.next_fire.hour == 3
        (run,) = admin.history("a")
        assert (run.status, run.version) == (RunStatus.SUCCEEDED, 1)  # it ran under version 1
