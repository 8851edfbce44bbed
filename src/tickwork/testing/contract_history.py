"""The store contract's tests of the run history: newest first, one run by id, the last runs of
many schedules, recent runs, removal with the schedule, and bounded pruning."""

from __future__ import annotations

from datetime import timedelta

from ..abc import Store
from ..structures import (
    Finish,
    Outcome,
    RunStatus,
)
from .contract_helpers import MINUTE, OK, claim_all, finish, spec


class HistoryContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    # -- history -----------------------------------------------------------------------------------

    def test_history_newest_first_with_filter_and_limit(self, store: Store) -> None:
        start = store.now() - timedelta(minutes=10)
        store.add(spec("a"), start)
        store.add(spec("b"), start)
        for i in range(1, 4):
            for c in claim_all(store):
                assert finish(store, c, start + timedelta(seconds=i))
        hist = store.history(limit=4)
        assert len(hist) == 4 and [r.id for r in hist] == sorted((r.id for r in hist), reverse=True)
        assert len(store.history()) == 6
        assert {r.schedule for r in store.history(schedule="a")} == {"a"}
        as_json = hist[0].as_json()
        for key in ("schedule", "scheduled_for", "started_at", "finished_at", "status", "node", "error"):
            assert key in as_json
        assert as_json["scheduled_for"].endswith("Z")

    def test_one_run_by_its_id(self, store: Store) -> None:
        start = store.now() - timedelta(minutes=10)
        store.add(spec("a"), start)
        store.add(spec("b"), start)
        for c in claim_all(store):
            assert finish(store, c, start + timedelta(seconds=1))
        for record in store.history():
            assert store.get_run(record.id) == record
        assert store.get_run(max(r.id for r in store.history()) + 1000) is None

    def test_last_runs_of_each_schedule_for_more_ids_than_one_statement_binds(self, store: Store) -> None:
        start = store.now() - timedelta(minutes=10)
        store.add(spec("a"), start)
        store.add(spec("b"), start)
        for i in range(1, 3):
            for c in claim_all(store):
                assert finish(store, c, start + timedelta(seconds=i), outcome=Outcome(RunStatus.FAILED, error=f"#{i}"))
        ids = {s.name: s.id for s in store.list_schedules()}
        # 70,000 ids: more than PostgreSQL's and MySQL's 65,535 bound parameters per statement
        # (`jobs add --from FILE --replace` of 70,000 schedules asks for all of their last runs).
        asked = [*range(max(ids.values()) + 1, max(ids.values()) + 70_001), ids["b"], ids["a"]]
        last = store.last_runs(asked)
        assert set(last) == {ids["a"], ids["b"]}
        assert last[ids["a"]].schedule == "a" and last[ids["a"]].error == "#2"
        assert store.last_runs([]) == {}

    def test_recent_runs_latest_first_per_schedule_with_a_status_filter(self, store: Store) -> None:
        start = store.now() - timedelta(minutes=10)
        store.add(spec("a"), start)
        store.add(spec("b"), start)
        store.add(spec("idle"), None)
        outcomes = [OK, Outcome(RunStatus.FAILED, error="#2"), Outcome(RunStatus.TIMED_OUT, error="#3")]
        for i, outcome in enumerate(outcomes, start=1):
            for c in claim_all(store):
                assert finish(store, c, start + timedelta(seconds=i), outcome=outcome)
        chosen = {s.name: s for s in store.list_schedules()}
        picked = [chosen["a"], chosen["b"], chosen["idle"]]
        recent = store.recent_runs(picked, limit=2)
        assert set(recent) == {s.id for s in picked}
        assert [r.status for r in recent[chosen["a"].id]] == [RunStatus.TIMED_OUT, RunStatus.FAILED]
        assert [r.scheduled_for for r in recent[chosen["b"].id]] == [
            start + timedelta(seconds=2),
            start + timedelta(seconds=1),
        ]
        assert {r.schedule for r in recent[chosen["b"].id]} == {"b"}
        assert recent[chosen["idle"].id] == []
        succeeded = store.recent_runs([chosen["a"]], limit=5, status=[RunStatus.SUCCEEDED])
        assert [r.scheduled_for for r in succeeded[chosen["a"].id]] == [start]
        assert store.recent_runs([], limit=3) == {}

    def test_remove_deletes_history(self, store: Store) -> None:
        store.add(spec("a"), store.now())
        (c,) = claim_all(store)
        finish(store, c, None)
        store.remove("a")
        assert store.history() == []
        store.add(spec("a"), store.now())
        assert store.history() == []

    def test_a_schedule_that_never_fires_again_is_not_due(self, store: Store) -> None:
        store.add(spec("once"), store.now())
        (c,) = claim_all(store)
        assert finish(store, c, None)
        assert store.get("once").next_fire is None and store.next_due(buckets=None) is None

    def test_prune_history_deletes_old_ended_runs_in_bounded_batches(self, store: Store) -> None:
        now = store.now()
        long_ago = now - timedelta(days=40)
        for name in ("a", "b", "c"):
            store.add(spec(name), now - 10 * MINUTE)
        # Three runs per schedule that ended long ago, each released still due a minute later.
        for step in range(1, 4):
            claims = claim_all(store)
            assert len(claims) == 3
            ends = [Finish(c, OK, now - (10 - step) * MINUTE, finished_at=long_ago) for c in claims]
            assert store.finish("n1", ends) == [True, True, True]
        # Then one that ended now (a), one that ended long ago but fences its fire (b: released
        # with its fire time unchanged), and one still running (c).
        last = {c.spec.name: c for c in claim_all(store)}
        assert finish(store, last["a"], now + MINUTE)
        b = last["b"]
        assert store.finish("n1", [Finish(b, OK, b.scheduled_for, finished_at=long_ago)]) == [True]
        kept = {r.id for r in store.history(limit=100) if r.finished_at is None or r.finished_at > long_ago}
        kept |= {r.id for r in store.history(limit=100, schedule="b") if r.scheduled_for == b.scheduled_for}
        assert len(store.history(limit=100)) == 12 and len(kept) == 3

        assert [store.prune_history(timedelta(days=30), limit=4) for _ in range(4)] == [4, 4, 1, 0]
        assert {r.id for r in store.history(limit=100)} == kept
        assert store.prune_history(timedelta(days=50)) == 0
