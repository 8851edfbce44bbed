"""The store contract's tests of the schedule catalogue: add, get, list, update, remove, a
plan written in one transaction, the clock, and "run now"."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import pytest

from ..abc import Store
from ..errors import ScheduleExistsError, ScheduleNotFoundError
from ..structures import (
    MisfirePolicy,
    Schedule,
    SchedulePlan,
    ScheduleSpec,
    ScheduleState,
)
from .contract_helpers import MINUTE, claim_all, finish, spec


class ScheduleCatalogContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    # -- schedules ---------------------------------------------------------------------------------

    def test_add_get_list_remove(self, store: Store) -> None:
        t = store.now()
        added = store.add(spec("b", arguments={"x": [1, 2]}, timezone="Europe/Berlin"), t)
        store.add(spec("a", module="app.jobs", misfire=MisfirePolicy.ALL, retries=2), None)
        assert added.spec.arguments == {"x": [1, 2]}
        assert added.next_fire == t and added.state is ScheduleState.IDLE
        got = store.get("b")
        assert got.spec == added.spec and got.id == added.id
        assert [s.name for s in store.list_schedules()] == ["a", "b"]
        assert [s.name for s in store.list_schedules(module="app.jobs")] == ["a"]
        assert store.get("a").spec.misfire is MisfirePolicy.ALL and store.get("a").spec.retries == 2
        store.remove("a")
        assert [s.name for s in store.list_schedules()] == ["b"]

    def test_duplicate_and_missing_names(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        with pytest.raises(ScheduleExistsError, match="'a'"):
            store.add(spec("a"), t)
        for call in (
            lambda: store.get("nope"),
            lambda: store.remove("nope"),
            lambda: store.set_enabled("nope", True, t),
            lambda: store.fire_now("nope"),
            lambda: store.update(spec("nope"), t),
        ):
            with pytest.raises(ScheduleNotFoundError, match="'nope'"):
                call()

    def test_update_replaces_definition(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        changed = spec("a", expression="*/5 * * * *", timeout=timedelta(seconds=7))
        updated = store.update(changed, t + timedelta(hours=1))
        assert updated.spec == changed and store.get("a").spec == changed
        assert updated.next_fire == t + timedelta(hours=1)

    def test_write_schedules_applies_a_plan(self, store: Store) -> None:
        start = store.now()
        store.add(spec("keep", module="app"), start + MINUTE)
        store.add(spec("retrigger", module="app"), start + MINUTE)
        store.add(spec("gone", module="app"), start + MINUTE)
        created = [spec(f"new-{i:04d}", module="app") for i in range(2500)]  # more than one batch
        clocks: list[datetime] = []
        seen: list[str] = []

        def plan(stored: Sequence[Schedule]) -> SchedulePlan:
            seen.extend(s.name for s in stored)
            return SchedulePlan(
                create=tuple(created),
                update=(spec("keep", module="app", target="m:g"),),
                retrigger=(spec("retrigger", module="app", expression="0 * * * *"),),
                remove=(("default", "gone"),),
            )

        def next_fire(s: ScheduleSpec, now: datetime) -> datetime:
            clocks.append(now)
            return now + timedelta(hours=1)

        store.write_schedules(plan, next_fire)
        assert sorted(seen) == ["gone", "keep", "retrigger"]
        assert len(clocks) == 2501 and min(clocks) >= start
        names = [s.name for s in store.list_schedules()]
        assert names == ["keep", *(s.name for s in created), "retrigger"]
        assert store.get("keep").next_fire == start + MINUTE and store.get("keep").spec.target == "m:g"
        retriggered = store.get("retrigger")
        assert retriggered.spec.expression == "0 * * * *" and retriggered.next_fire is not None
        assert retriggered.next_fire > start + MINUTE
        assert store.get("new-2499").spec == created[-1]

    def test_write_schedules_refuses_a_name_taken_and_a_plan_that_raises(self, store: Store) -> None:
        store.add(spec("taken"), store.now())
        with pytest.raises(ScheduleExistsError, match="taken"):
            store.write_schedules(lambda _: SchedulePlan(create=(spec("taken", module="app"),)), lambda s, now: now)
        with pytest.raises(ValueError, match="refused"):
            store.write_schedules(_refuse, lambda s, now: now)
        assert [s.name for s in store.list_schedules()] == ["taken"] and store.get("taken").spec.module is None

    def test_the_clock_is_aware_utc_and_never_goes_back(self, store: Store) -> None:
        first = store.now()
        second = store.now()
        assert first.utcoffset() == timedelta(0)
        assert second >= first

    # -- run now -----------------------------------------------------------------------------------

    def test_fire_now(self, store: Store) -> None:
        store.add(spec("a"), store.now() + timedelta(days=1))
        before = store.now()
        fired = store.fire_now("a")
        assert fired.next_fire is not None and before <= fired.next_fire <= store.now()
        (c,) = claim_all(store)
        assert c.scheduled_for == fired.next_fire

    def test_fire_now_while_running_fires_right_after_the_run(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        (c,) = claim_all(store)
        store.fire_now("a")
        assert store.get("a").state is ScheduleState.RUNNING  # the run in progress is left alone
        assert finish(store, c, t + timedelta(days=1))
        s = store.get("a")
        assert s.next_fire is not None and s.next_fire <= store.now()
        (again,) = claim_all(store)
        assert again.run_id is not None


def _refuse(stored: Sequence[Schedule]) -> SchedulePlan:
    raise ValueError("plan refused")
