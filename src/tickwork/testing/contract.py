"""``StoreContract``: the store contract (docs/claim-protocol.md) as an importable pytest class.

A store author subclasses it and provides one fixture, ``make_store``: a callable that returns a
fresh, migrated, open store over an empty database (the contract closes what it opens)::

    import pytest

    from tickwork.testing import StoreContract


    class TestMyStore(StoreContract):
        @pytest.fixture
        def make_store(self, tmp_path):
            def make():
                store = MyStore(str(tmp_path / "tickwork.db"))
                store.open()  # migrates an empty database where the store may, then checks
                return store

            return make

The tests use only the public :class:`~tickwork.abc.Store` interface and the store's own clock
(``store.now()``): every time in them is relative to a reading of it, so no test clock has to be
injected and the statements under test are the ones production runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta

import pytest

from ..abc import Store
from ..structures import Claim, Finish, Outcome, RunStatus, ScheduleState
from .contract_backfill import BackfillOverlapContract
from .contract_buckets import BucketContract
from .contract_concurrency import ConcurrencyContract
from .contract_expiry import ClaimExpiryContract
from .contract_helpers import MINUTE, OK, claim_all, finish, spec
from .contract_history import HistoryContract
from .contract_namespaces import NamespacesContract
from .contract_nodes import NodeRecordContract
from .contract_reruns import RerunContract
from .contract_rounds import StartRoundContract
from .contract_schedules import ScheduleCatalogContract
from .contract_semantics import SemanticsContract
from .contract_starts import FencedStartContract
from .contract_tokens import TokensContract
from .contract_versions import VersionsContract
from .contract_writes import WritesDuringRunContract
from .handoff_contract import HandoffContract


class StoreContract(
    BucketContract,
    ScheduleCatalogContract,
    ClaimExpiryContract,
    HistoryContract,
    HandoffContract,
    SemanticsContract,
    FencedStartContract,
    StartRoundContract,
    RerunContract,
    ConcurrencyContract,
    NodeRecordContract,
    BackfillOverlapContract,
    WritesDuringRunContract,
    VersionsContract,
    TokensContract,
    NamespacesContract,
):
    """The tests every :class:`~tickwork.abc.Store` passes; subclass it and define ``make_store``.

    This class holds the claim invariants (never early, only the holder advances, one run per due
    time); the rest is mixed in: which buckets' fires a claim takes (:mod:`.contract_buckets`),
    the schedule catalogue (:mod:`.contract_schedules`), expiring
    claims (:mod:`.contract_expiry`), the history (:mod:`.contract_history`), schedule semantics
    (:mod:`.contract_semantics`), hand-offs (:mod:`.handoff_contract`), fenced starts
    (:mod:`.contract_starts`) and a start window's round trip (:mod:`.contract_rounds`), reruns
    of abandoned fires (:mod:`.contract_reruns`), concurrent runs (:mod:`.contract_concurrency`), a
    backfill's overlap (:mod:`.contract_backfill`), writes on a schedule whose run is in flight
    (:mod:`.contract_writes`), versions (:mod:`.contract_versions`) and API tokens
    (:mod:`.contract_tokens`)."""

    @pytest.fixture
    def make_store(self) -> Callable[[], Store]:
        raise NotImplementedError("a StoreContract subclass defines the make_store fixture")

    @pytest.fixture
    def store(self, make_store: Callable[[], Store]) -> Iterator[Store]:
        s = make_store()
        yield s
        s.close()

    # -- claiming: invariant 2, never early ----------------------------------------------------------

    def test_never_claims_before_due(self, store: Store) -> None:
        t = store.now()
        store.add(spec("later"), t + MINUTE)
        store.add(spec("due"), t)
        assert store.next_due(buckets=None) == t
        (c,) = claim_all(store)
        assert c.spec.name == "due" and c.scheduled_for == t and not c.early
        assert c.claimed_at >= t and c.run_id is not None
        assert claim_all(store) == []
        assert store.next_due(buckets=None) == t + MINUTE  # a running schedule is not "due"

    def test_claim_ahead_takes_only_what_is_due_within_the_window(self, store: Store) -> None:
        t = store.now()
        store.add(spec("soon"), t + timedelta(seconds=30))
        store.add(spec("later"), t + timedelta(seconds=120))
        assert claim_all(store, ahead=20) == []
        (c,) = claim_all(store, ahead=60)
        assert c.spec.name == "soon" and c.early and c.claimed_at >= t
        assert c.scheduled_for == t + timedelta(seconds=30) and c.run_id is not None
        assert store.get("soon").state is ScheduleState.RUNNING
        (run,) = store.history()
        assert run.status is RunStatus.RUNNING and run.started_at is None  # not started yet
        assert claim_all(store, "n2", ahead=60) == []  # held like any claim
        # The engine reports when it actually started the run.
        started = t + timedelta(seconds=30.001)
        assert finish(store, c, t + MINUTE, started_at=started)
        (run,) = store.history()
        assert run.status is RunStatus.SUCCEEDED and run.started_at == started

    def test_a_claim_made_when_due_records_its_start(self, store: Store) -> None:
        store.add(spec("a"), store.now())
        (c,) = claim_all(store)
        assert finish(store, c, c.scheduled_for + MINUTE)
        (run,) = store.history()
        # Not before it was due, not after it was claimed (a strategy that inserts the run in an
        # earlier statement of the claim's transaction reads the clock a moment before).
        assert run.started_at is not None and c.scheduled_for <= run.started_at <= c.claimed_at

    def test_unclaim_gives_back_early_claims_as_if_never_made(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t + MINUTE)
        store.add(spec("b"), t + MINUTE)
        claims = claim_all(store, ahead=120)
        assert len(claims) == 2
        assert store.unclaim("n1", claims) == 2
        for name in ("a", "b"):
            s = store.get(name)
            assert s.state is ScheduleState.IDLE and s.claimed_by is None and s.next_fire == t + MINUTE
        assert store.history() == []
        again = claim_all(store, "n2", ahead=120)
        assert sorted(c.spec.name for c in again) == ["a", "b"]
        assert all(c.run_id is not None for c in again)  # the fire is not "already recorded"
        # Fenced: a stale claim gives back nothing and leaves the new holder alone.
        assert store.unclaim("n1", claims) == 0
        assert all(store.get(n).claimed_by == "n2" for n in ("a", "b"))
        assert len(store.history()) == 2

    def test_disabled_and_never_firing_are_not_claimed(self, store: Store) -> None:
        t = store.now()
        store.add(spec("off", enabled=False), t)
        store.add(spec("never"), None)
        store.add(spec("on"), t)
        store.set_enabled("on", False, t)
        assert store.get("on").spec.enabled is False
        assert claim_all(store) == [] and store.next_due(buckets=None) is None
        store.set_enabled("on", True, t)
        assert [c.spec.name for c in claim_all(store)] == ["on"]

    def test_claims_earliest_first_and_honours_limit(self, store: Store) -> None:
        t = store.now()
        for i in range(5):
            store.add(spec(f"s{i}"), t - timedelta(seconds=i))
        claims = store.claim_due("n1", limit=2, buckets=None)
        assert [c.spec.name for c in claims] == ["s4", "s3"]
        assert {c.spec.name for c in claim_all(store)} == {"s2", "s1", "s0"}

    # -- claiming: invariant 3, only the holder advances ------------------------------------------

    def test_claim_marks_running_and_is_exclusive(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        (c,) = claim_all(store, "n1")
        s = store.get("a")
        assert s.state is ScheduleState.RUNNING and s.claimed_by == "n1" and s.claim_seq == c.claim_seq
        assert claim_all(store, "n2") == []
        (run,) = store.history()
        assert run.status is RunStatus.RUNNING and run.node == "n1" and run.scheduled_for == t

    def test_finish_releases_with_next_fire_and_records_outcome(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        (c,) = claim_all(store)
        assert finish(store, c, t + MINUTE, outcome=Outcome(RunStatus.FAILED, error="boom"))
        after = store.now()
        s = store.get("a")
        assert s.state is ScheduleState.IDLE and s.claimed_by is None and s.next_fire == t + MINUTE
        (run,) = store.history()
        assert run.status is RunStatus.FAILED and run.error == "boom"
        assert run.finished_at is not None and c.claimed_at <= run.finished_at <= after
        assert store.next_due(buckets=None) == t + MINUTE

    def test_a_trigger_changed_during_a_run_keeps_the_next_fire_it_set(self, store: Store) -> None:
        t = store.now()
        hour = timedelta(hours=1)
        store.add(spec("a"), t)
        store.add(spec("b"), t)
        ca, cb = sorted(claim_all(store), key=lambda c: c.spec.name)
        store.update(spec("a", expression="0 * * * *"), t + hour)  # synced while running
        store.update(spec("b", target="mod:other"), None, retime=False)  # the run's next fire still wins
        assert finish(store, ca, t + MINUTE) and finish(store, cb, t + MINUTE)
        assert store.get("a").next_fire == t + hour
        assert store.get("b").next_fire == t + MINUTE
        store.fire_now("a")
        (again,) = [c for c in claim_all(store) if c.spec.name == "a"]
        assert finish(store, again, t + 2 * hour)  # retimed once, not for ever
        assert store.get("a").next_fire == t + 2 * hour

    def test_a_claim_carries_the_stored_arguments(self, store: Store) -> None:
        t = store.now()
        arguments = {"text": 'zwölf \u20ac "quoted"', "nested": {"list": [1, 2.5, None, True]}, "n": 10**12}
        store.add(spec("a", arguments=arguments), t)
        store.add(spec("b"), t)
        claims = {c.spec.name: c for c in claim_all(store)}
        assert claims["a"].spec.arguments == arguments and claims["b"].spec.arguments == {}

    def test_finish_records_the_end_time_it_is_given(self, store: Store) -> None:
        # An end written a little after the run ended (batched) keeps the time it ended.
        t = store.now()
        store.add(spec("a"), t)
        store.add(spec("b"), t)
        ca, cb = claim_all(store)
        ended = ca.claimed_at + timedelta(microseconds=1500)
        landed = store.finish("n1", [Finish(ca, OK, t + MINUTE, finished_at=ended), Finish(cb, OK, t + MINUTE)])
        after = store.now()
        assert landed == [True, True]
        runs = {r.schedule: r for r in store.history()}
        assert runs["a"].finished_at == ended
        b_end = runs["b"].finished_at
        assert b_end is not None and cb.claimed_at <= b_end <= after

    def test_skipped_fire_times_are_recorded(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        (c,) = claim_all(store)
        times = (t + MINUTE, t + 2 * MINUTE)
        assert finish(store, c, t + 3 * MINUTE, skipped=tuple((x, "still active") for x in times))
        runs = sorted(store.history(), key=lambda r: r.scheduled_for)
        assert [r.status for r in runs] == [RunStatus.SUCCEEDED, RunStatus.SKIPPED, RunStatus.SKIPPED]
        assert [r.scheduled_for for r in runs[1:]] == list(times)
        assert all("still active" in (r.error or "") for r in runs[1:])

    def test_fenced_end_after_takeover_changes_nothing_else(self, store: Store) -> None:
        """FTL's EndCronJob fence: a late finisher whose claim was taken over only notes its run."""
        t = store.now()
        store.add(spec("a"), t)
        (old,) = claim_all(store, "n1")
        assert store.release_node("n1", "n1 declared dead") == 1
        assert store.get("a").state is ScheduleState.IDLE
        # Due again at the same time: its run is already recorded, so the new claim comes without
        # a run (the engine advances it without running the fire a second time).
        (again,) = claim_all(store, "n2")
        assert again.run_id is None and again.claim_seq > old.claim_seq
        assert finish(store, again, t + MINUTE, node="n2")
        assert claim_all(store, "n2") == []
        assert not finish(store, old, t + timedelta(hours=5), node="n1")
        s = store.get("a")
        assert s.next_fire == t + MINUTE and s.state is ScheduleState.IDLE
        (run,) = store.history()
        assert run.status is RunStatus.ABANDONED and "taken over" in (run.error or "")

    # -- invariant 1, one run per due time ---------------------------------------------------------

    def test_duplicate_fire_is_impossible_to_record(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        claim_all(store)
        store.release_node("n1", "test")
        store.set_enabled("a", True, t)  # due again at the very same time
        (dup,) = claim_all(store, "n2")
        assert dup.run_id is None
        assert len(store.history()) == 1

    def test_retry_attempts_are_fenced_and_unique(self, store: Store) -> None:
        store.add(spec("a", retries=2), store.now())
        (c,) = claim_all(store)
        store.end_attempt(c, Outcome(RunStatus.FAILED, error="first"))
        second = Claim(c.schedule_id, c.spec, c.scheduled_for, c.claim_seq, c.claimed_at, None, attempt=2)
        run_id = store.start_attempt("n1", second)
        assert run_id is not None and run_id != c.run_id
        # Asked again under the same claim (an answer lost): the same attempt, not a second one.
        assert store.start_attempt("n1", second) == run_id
        stale = Claim(c.schedule_id, c.spec, c.scheduled_for, c.claim_seq - 1, c.claimed_at, None, attempt=3)
        assert store.start_attempt("n1", stale) is None
        assert finish(store, replace(second, run_id=run_id), c.scheduled_for + MINUTE)
        runs = sorted(store.history(), key=lambda r: r.attempt)
        assert [(r.attempt, r.status) for r in runs] == [(1, RunStatus.FAILED), (2, RunStatus.SUCCEEDED)]
        assert runs[0].error == "first"
