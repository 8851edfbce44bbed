"""PostgreSQL's plans for the claim statement: the due index read in order and rows found by
primary key, with and without a bucket mask, whatever the table's size.

Two plans once made every claim cost as much as the burst it was draining (docs/benchmarks.md,
"Bursts of 100,000 and hashring against all"): an equality on the mask byte, estimated at 0.5 %
of the rows, made the planner scan and sort every due row; and the UPDATE joined the locked rows
by hashing them and scanning the whole table. Plans, not timings: EXPLAIN without ANALYZE."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.support import planted
from tests.support.servers.postgres import POSTGRES, PostgresServer
from tickwork.structures import Finish, Outcome, RunStatus, SchedulePlan, ScheduleSpec
from tickwork_membership.ring import BucketRing
from tickwork_postgres.store import PostgresStore

DUE = 10_000


@pytest.fixture(scope="module")
def burst_store(postgres_server: PostgresServer) -> Iterator[PostgresStore]:
    with POSTGRES.fresh_database(postgres_server) as dbname:
        store = PostgresStore(planted.with_password(postgres_server.url(dbname)), claim="skip-locked")
        try:
            yield from _filled(store)
        finally:
            store.close()


def _filled(store: PostgresStore) -> Iterator[PostgresStore]:
    store.upgrade()
    store.open()
    specs = [ScheduleSpec(f"s{i}", "cron", "0 0 1 1 *", "tickwork_bench.jobs:noop") for i in range(DUE)]
    now = store.now()
    # Every one due now, as at the start of a burst; then the statistics a node would meet.
    store.write_schedules(lambda _stored: SchedulePlan(create=specs), lambda _spec, _now: now)
    store.refresh_statistics()
    yield store


OWNER_OF_TWO = BucketRing(["n1", "n2", "n3", "n4"], owners=2).buckets_of("n1")


@pytest.mark.parametrize(
    ("buckets", "steal_after"),
    [(None, None), (OWNER_OF_TWO, None), (OWNER_OF_TWO, 0.25)],
    ids=["all-buckets", "hash-ring-2-of-4", "hash-ring-2-of-4-stealing-overdue"],
)
def test_a_claim_reads_the_due_index_in_order_and_rows_by_primary_key(
    burst_store: PostgresStore, buckets: list[int] | None, steal_after: float | None
) -> None:
    plan = burst_store.explain_claim(limit=100, buckets=buckets, steal_after=steal_after)
    assert "Index Scan using ix_tickwork_schedules_due" in plan, plan
    assert "Sort" not in plan, plan
    assert "Seq Scan on tickwork_schedules" not in plan, plan
    assert "Index Scan using pk_tickwork_schedules" in plan, plan
    # The release too: not every running schedule through the claims' partial index.
    assert "ix_tickwork_schedules_claimed" not in plan, plan


@pytest.mark.parametrize("claim", ["optimistic", "advisory", "unique-fire"])
def test_explain_claim_refuses_strategies_without_one_statement_built_ahead(
    burst_store: PostgresStore, claim: str
) -> None:
    store = PostgresStore(burst_store.url, claim=claim)
    try:
        store.open()
        with pytest.raises(ValueError, match=f"{claim!r} does not claim with one statement"):
            store.explain_claim(limit=10)
    finally:
        store.close()


def test_a_batch_of_ends_locks_its_rows_by_primary_key(postgres_server: PostgresServer) -> None:
    """The end statement locks and releases the batch's rows by ``id = ANY`` an array of their
    ids: as ``id IN (SELECT ...)`` of the batch's document (100 rows to the planner) it hashed
    them and scanned the whole table, every dead row version of a busy minute included, and the
    release read every running schedule through the claims' partial index."""
    with POSTGRES.fresh_database(postgres_server) as dbname:
        store = PostgresStore(planted.with_password(postgres_server.url(dbname)), claim="skip-locked")
        try:
            store.upgrade()
            store.open()
            specs = [ScheduleSpec(f"s{i}", "cron", "0 0 1 1 *", "tickwork_bench.jobs:noop") for i in range(1000)]
            now = store.now()
            store.write_schedules(lambda _stored: SchedulePlan(create=specs), lambda _spec, _now: now)
            store.refresh_statistics()
            claims = store.claim_due("n1", limit=20, buckets=None)
            finishes = [Finish(c, Outcome(RunStatus.SUCCEEDED), now + timedelta(days=365)) for c in claims]
            plan = store.explain_ends(finishes)
        finally:
            store.close()
    assert "Seq Scan on tickwork_schedules" not in plan, plan
    assert "Index Scan using pk_tickwork_schedules" in plan, plan
    # The release too: not every running schedule through the claims' partial index.
    assert "ix_tickwork_schedules_claimed" not in plan, plan
