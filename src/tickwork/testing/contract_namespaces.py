"""The part of :class:`~tickwork.testing.StoreContract` about namespaces (docs/teams.md): a name is
unique within its namespace and every write and read by name stays in it; a node serving some
namespaces claims only theirs; the claim takes turns between namespaces, so a herd in one does not
stand before another's due fires; and a namespace's limits (``max_schedules`` refused in the
write, ``max_concurrent`` counted by the admission) hold."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ..abc import Store
from ..errors import NamespaceLimitError, ScheduleExistsError, ScheduleNotFoundError
from ..structures import Admission, NamespaceLimits, Pause, RunStatus, SchedulePlan, ScheduleState
from .contract_helpers import MINUTE, OK, claim_all, finish, spec

SECOND = timedelta(seconds=1)


class NamespacesContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    def test_one_name_in_two_namespaces_is_two_schedules(self, store: Store) -> None:
        t = store.now()
        a = store.add(spec("report", namespace="a"), t + MINUTE)
        b = store.add(spec("report", namespace="b", target="m:g"), t + MINUTE)
        assert a.id != b.id and a.namespace == "a" and b.namespace == "b"
        assert store.get("report", namespace="a").spec.target == "m:f"
        assert store.get("report", namespace="b").spec.target == "m:g"
        with pytest.raises(ScheduleNotFoundError):
            store.get("report")  # the default namespace holds none
        with pytest.raises(ScheduleExistsError):
            store.add(spec("report", namespace="a"), t + MINUTE)
        assert [s.key for s in store.list_schedules()] == [("a", "report"), ("b", "report")]
        assert [s.namespace for s in store.list_schedules(namespace="b")] == ["b"]
        assert [s.namespace for s in store.find_schedules(namespace="a")] == ["a"]
        assert store.count_schedules(namespace="b") == 1 and store.count_schedules() == 2

    def test_writes_by_name_stay_in_their_namespace(self, store: Store) -> None:
        t = store.now()
        store.add(spec("job", namespace="a"), t + MINUTE)
        store.add(spec("job", namespace="b"), t + MINUTE)
        store.update(spec("job", namespace="b", retries=3), None, retime=False, by="bob")
        assert store.get("job", namespace="a").spec.retries == 0
        assert [v.version for v in store.versions("job", namespace="b")] == [1, 2]
        assert [v.version for v in store.versions("job", namespace="a")] == [1]
        store.set_enabled("job", False, None, Pause("quiet", by="ops"), namespace="a")
        assert not store.get("job", namespace="a").spec.enabled and store.get("job", namespace="b").spec.enabled
        store.fire_now("job", namespace="b")
        fired = store.get("job", namespace="b").next_fire
        assert fired is not None and fired <= store.now()
        assert store.get("job", namespace="a").next_fire is None  # paused
        store.remove("job", namespace="a")
        assert [s.key for s in store.list_schedules()] == [("b", "job")]

    def test_runs_carry_their_namespace_and_the_history_filters_by_it(self, store: Store) -> None:
        t = store.now()
        store.add(spec("job", namespace="a"), t)
        store.add(spec("job", namespace="b"), t)
        for claim in claim_all(store):
            assert finish(store, claim, t + MINUTE)
        assert sorted(r.namespace for r in store.history()) == ["a", "b"]
        (only,) = store.history(namespace="b")
        assert (only.schedule, only.namespace, only.status) == ("job", "b", RunStatus.SUCCEEDED)
        assert [r.namespace for r in store.find_runs(schedule="job", namespace="a")] == ["a"]
        assert only.as_json()["namespace"] == "b"

    def test_a_batch_write_keys_schedules_by_namespace_and_name(self, store: Store) -> None:
        t = store.now()
        store.add(spec("job", namespace="a", module="app"), t + MINUTE)
        store.add(spec("job", namespace="b", module="app"), t + MINUTE)
        store.write_schedules(
            lambda _: SchedulePlan(
                create=(spec("job", namespace="c", module="app"),),
                update=(spec("job", namespace="a", module="app", target="m:g"),),
                remove=(("b", "job"),),
            ),
            lambda s, now: now + MINUTE,
        )
        assert [s.key for s in store.list_schedules()] == [("a", "job"), ("c", "job")]
        assert store.get("job", namespace="a").spec.target == "m:g"
        assert store.get("job", namespace="c").spec.target == "m:f"
        assert [v.version for v in store.versions("job", namespace="a")] == [1, 2]

    def test_a_node_serving_some_namespaces_claims_only_theirs(self, store: Store) -> None:
        t = store.now()
        store.add(spec("x", namespace="a"), t - SECOND)
        store.add(spec("y", namespace="b"), t)
        assert store.next_due(buckets=None, namespaces=["b"]) == t
        assert store.next_due(buckets=None, namespaces=["c"]) is None
        claimed = store.claim_due("n1", limit=100, buckets=None, namespaces=["b"])
        assert [c.spec.key for c in claimed] == [("b", "y")]
        assert store.get("x", namespace="a").state is ScheduleState.IDLE
        assert store.claim_due("n1", limit=100, buckets=None, namespaces=["c"]) == []
        assert [c.spec.key for c in store.claim_due("n2", limit=100, buckets=None)] == [("a", "x")]

    def test_a_herd_in_one_namespace_does_not_stand_before_another(self, store: Store) -> None:
        t = store.now()
        # 30 fires of namespace a due before b's three: a claim of 10 earliest-first would take
        # only a's. The fair claim gives each namespace a share of every claim.
        for i in range(30):
            store.add(spec(f"herd-{i:02d}", namespace="a"), t - 10 * SECOND)
        for i in range(3):
            store.add(spec(f"tick-{i}", namespace="b"), t - SECOND)
        first = store.claim_due("n1", limit=10, buckets=None)
        assert len(first) == 10
        assert sorted(c.spec.name for c in first if c.spec.namespace == "b") == ["tick-0", "tick-1", "tick-2"]
        # What b left of its share went to a; the rest of a's herd follows in later claims.
        rest = claim_all(store)
        assert len(rest) == 23 and {c.spec.namespace for c in rest} == {"a"}

    def test_max_schedules_refuses_the_add_past_it_and_names_the_limit(self, store: Store) -> None:
        store.namespace_limits = {"a": NamespaceLimits(max_schedules=2)}
        t = store.now()
        store.add(spec("one", namespace="a"), t + MINUTE)
        store.add(spec("two", namespace="a"), t + MINUTE)
        with pytest.raises(NamespaceLimitError, match=r"\[namespaces\.a\] max_schedules = 2"):
            store.add(spec("three", namespace="a"), t + MINUTE)
        store.add(spec("three", namespace="b"), t + MINUTE)  # another namespace: no limit
        plan = SchedulePlan(create=(spec("four", namespace="a"), spec("five", namespace="b")))
        with pytest.raises(NamespaceLimitError):
            store.write_schedules(lambda _: plan, lambda s, now: now + MINUTE)
        assert [s.key for s in store.list_schedules()] == [("a", "one"), ("b", "three"), ("a", "two")]
        # A plan that removes as many as it adds fits.
        swap = SchedulePlan(create=(spec("four", namespace="a"),), remove=(("a", "one"),))
        store.write_schedules(lambda _: swap, lambda s, now: now + MINUTE)
        assert sorted(s.name for s in store.list_schedules(namespace="a")) == ["four", "two"]

    def test_max_concurrent_bounds_the_admitted_runs_of_a_namespace(self, store: Store) -> None:
        t = store.now()
        for name in ("p", "q", "r"):
            store.add(spec(name, namespace="a"), t)
        store.add(spec("s", namespace="b"), t)
        claims = {c.spec.key: c for c in claim_all(store)}

        def admit(key: tuple[str, str]) -> str | None:
            return store.admit("n1", Admission(claims[key], release=False, namespace_limit=2))

        assert admit(("a", "p")) is None and admit(("a", "q")) is None
        refused = admit(("a", "r"))
        assert refused is not None and "max_concurrent = 2" in refused
        assert admit(("b", "s")) is None  # b counts its own runs
        # A run that ends stops counting.
        assert finish(store, claims[("a", "p")], t + MINUTE, outcome=OK)
        assert admit(("a", "r")) is None

    def test_a_node_serving_some_namespaces_takes_only_their_backfills(self, store: Store) -> None:
        t = store.now()
        store.add(spec("job", namespace="a"), t + MINUTE)
        store.add(spec("job", namespace="b"), t + MINUTE)
        past = t - 10 * MINUTE
        assert store.queue_backfill("job", [past], namespace="a") == [past]
        assert store.queue_backfill("job", [past], namespace="b") == [past]
        taken = store.take_backfills("n1", limit=10, buckets=None, namespaces=["b"])
        assert [c.spec.key for c in taken] == [("b", "job")]
        assert store.take_backfills("n1", limit=10, buckets=None, namespaces=["b"]) == []
        assert [c.spec.key for c in store.take_backfills("n2", limit=10, buckets=None)] == [("a", "job")]
