"""The store contract's tests of schedule versions (docs/cli.md#versions): every write that changes
a definition records its next version in the same write, with who wrote it and what changed; a
write of state (enable, disable, pause) records none; and every run records the version its fire
was claimed under."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from ..abc import Store
from ..scheduling.versions import changes, definition
from ..structures import Finish, Outcome, Pause, RunStatus, SchedulePlan
from .contract_helpers import MINUTE, claim_all, finish, spec


class VersionsContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    def test_add_writes_version_1_with_its_author_and_definition(self, store: Store) -> None:
        t = store.now()
        added = store.add(spec("a", retries=2), t + MINUTE, by="alice")
        assert added.version == 1 and store.get("a").version == 1
        (first,) = store.versions("a")
        assert (first.schedule, first.version, first.by) == ("a", 1, "alice")
        assert t <= first.at <= store.now()
        assert first.definition == definition(spec("a", retries=2))
        # A new schedule's changes: the fields it sets away from their defaults.
        assert first.changes["retries"] == {"old": None, "new": 2}
        assert first.changes["expression"] == {"old": None, "new": "* * * * *"}
        assert "tz" not in first.changes and "timeout" not in first.changes

    def test_a_changed_definition_is_the_next_version_with_old_and_new(self, store: Store) -> None:
        store.add(spec("a"), store.now() + MINUTE, by="alice")
        updated = store.update(spec("a", expression="0 * * * *", retries=3), None, retime=False, by="bob")
        assert updated.version == 2
        second = store.versions("a")[-1]
        assert (second.version, second.by) == (2, "bob")
        assert second.changes == {
            "expression": {"old": "* * * * *", "new": "0 * * * *"},
            "retries": {"old": 0, "new": 3},
        }
        assert second.definition["expression"] == "0 * * * *" and second.definition["retries"] == 3

    def test_state_and_unchanged_writes_make_no_version(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t + MINUTE)
        store.update(spec("a"), t + MINUTE)  # the same definition again
        store.update(spec("a", enabled=False), None)  # enabled is state
        store.set_enabled("a", True, t + MINUTE)
        store.set_enabled("a", False, None, Pause("db migration", by="ops"))
        store.fire_now("a")
        assert [v.version for v in store.versions("a")] == [1]
        assert store.get("a").version == 1

    def test_a_batch_write_versions_what_it_creates_and_changes(self, store: Store) -> None:
        t = store.now()
        store.add(spec("kept"), t + MINUTE)
        store.add(spec("changed"), t + MINUTE)
        store.add(spec("retimed"), t + MINUTE)
        store.write_schedules(
            lambda _: SchedulePlan(
                create=(spec("new"),),
                update=(spec("kept"), spec("changed", timeout=timedelta(seconds=7))),
                retrigger=(spec("retimed", expression="*/5 * * * *"),),
            ),
            lambda _spec, now: now + MINUTE,
            by="code",
        )
        assert [(v.version, v.by) for v in store.versions("new")] == [(1, "code")]
        assert [v.version for v in store.versions("kept")] == [1]
        assert store.versions("changed")[-1].changes == {"timeout": {"old": 300.0, "new": 7.0}}
        assert [(v.version, v.by) for v in store.versions("retimed")] == [(1, None), (2, "code")]
        assert store.get("retimed").version == 2 and store.get("kept").version == 1

    def test_a_batch_creates_each_schedules_own_first_version(self, store: Store) -> None:
        # Many share a shape (everything but the target), as a module's declared jobs do; some
        # differ by an option, by arguments, or by a target JSON must escape.
        created = [
            *(spec(f"same-{i}", target=f"m:f{i}") for i in range(5)),
            spec("retries", target="m:f0", retries=2),
            spec("args", target="m:f0", arguments={"x": [1, "ü"]}),
            spec("escaped", target='m:"ü" \\ ✓'),
            *(
                spec(f"hourly-{i}", expression="0 * * * *", target=f"m:f{i}", timezone="Europe/Berlin")
                for i in range(3)
            ),
        ]
        store.write_schedules(lambda _: SchedulePlan(create=tuple(created)), lambda _spec, now: now + MINUTE, by="code")
        for s in created:
            (first,) = store.versions(s.name)
            assert (first.version, first.by, first.definition) == (1, "code", definition(s)), s.name
            assert first.changes == changes(None, definition(s)), s.name

    def test_removing_a_schedule_removes_its_versions(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t + MINUTE)
        store.update(spec("a", retries=1), None, retime=False)
        store.remove("a")
        store.add(spec("a"), t + MINUTE, by="again")
        assert [(v.version, v.by) for v in store.versions("a")] == [(1, "again")]

    def test_a_run_records_the_version_it_fired_under(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        (first,) = claim_all(store)
        assert first.version == 1
        # Changed while its run is in flight: that run stays of version 1, the next is of 2.
        store.update(spec("a", retries=1), None, retime=False)
        assert finish(store, first, t + timedelta(microseconds=1))
        (second,) = claim_all(store)
        assert second.version == 2
        assert finish(store, second, t + MINUTE)
        runs = store.history(schedule="a")
        assert sorted((r.scheduled_for, r.version) for r in runs) == [
            (t, 1),
            (t + timedelta(microseconds=1), 2),
        ]

    def test_a_retry_and_a_skipped_fire_record_the_claims_version(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a", retries=1), t)
        (claim,) = claim_all(store)
        store.update(spec("a", retries=1, timeout=timedelta(seconds=9)), None, retime=False)
        retry = replace(claim, attempt=2, run_id=None)  # as the engine's retries make it
        failed = Outcome(RunStatus.FAILED, "boom")
        store.end_attempt(claim, failed)
        run_id = store.start_attempt("n1", retry)
        assert run_id is not None
        retry = replace(retry, run_id=run_id)
        skipped = ((t - MINUTE, "missed"),)
        assert store.finish("n1", [Finish(retry, Outcome(RunStatus.SUCCEEDED), t + MINUTE, skipped=skipped)]) == [True]
        assert {(r.attempt, r.status, r.version) for r in store.history(schedule="a")} == {
            (1, RunStatus.FAILED, 1),
            (2, RunStatus.SUCCEEDED, 1),
            (1, RunStatus.SKIPPED, 1),
        }

    def test_a_plans_applied_names_record_the_version_it_leaves(self, store: Store) -> None:
        t = store.now()
        store.add(spec("kept"), t + MINUTE, by="alice")
        store.add(spec("other"), t + MINUTE)
        assert store.get("kept").applied_version is None  # never applied

        def plan(stored: object) -> SchedulePlan:
            return SchedulePlan(
                create=(spec("new"),),
                update=(spec("kept", retries=2),),
                applied=(("default", "new"), ("default", "kept"), ("default", "gone")),  # one not stored: skipped
            )

        store.write_schedules(plan, lambda s, now: now + MINUTE, by="apply:carol")
        # After the versions moved: kept is at version 2 and applied there; new at 1.
        assert (store.get("kept").version, store.get("kept").applied_version) == (2, 2)
        assert (store.get("new").version, store.get("new").applied_version) == (1, 1)
        assert store.get("other").applied_version is None
        assert store.versions("kept")[-1].by == "apply:carol"
        # A later change by anyone else moves the version past the applied one (drift).
        store.update(spec("kept", retries=3), None, retime=False, by="dave")
        assert (store.get("kept").version, store.get("kept").applied_version) == (3, 2)
        store.mark_applied([("default", "kept")])
        assert store.get("kept").applied_version == 3

    def test_marking_applied_leaves_a_run_in_flight_and_its_fence_alone(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        (claim,) = claim_all(store)
        store.mark_applied([("default", "a")])
        held = store.get("a")
        assert (held.applied_version, held.claim_seq, held.claimed_by) == (1, claim.claim_seq, "n1")
        assert finish(store, claim, t + MINUTE)
        assert store.get("a").next_fire == t + MINUTE
