"""Admissions under one concurrency key racing from several connections at once (each its own
store, as nodes are): on SQLite, PostgreSQL and MySQL exactly ``concurrency_limit`` of them are
admitted, every time, and the others are refused with the reason (docs/claim-protocol.md#concurrent-runs)."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.stores import make_store
from tickwork.abc import Store
from tickwork.structures import Admission, Claim, Finish, Outcome, RunStatus, ScheduleSpec

NODES = 6
LIMIT = 2
ROUNDS = 5


def race(stores: list[Store], claims: list[Claim]) -> list[str | None]:
    """Every store asks to admit its claim at the same moment, each from its own thread."""
    answers: list[str | None] = [""] * len(stores)
    start = threading.Barrier(len(stores))

    def admit(i: int) -> None:
        start.wait()
        answers[i] = stores[i].admit(f"n{i}", Admission(claims[i], release=False))

    threads = [threading.Thread(target=admit, args=(i,)) for i in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return answers


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "mysql"])
def test_racing_admissions_never_exceed_the_key_limit(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    stores: list[Store] = [make_store(kind, "optimistic" if kind == "sqlite" else "skip-locked", request, tmp_path)]
    stores += [
        make_store(kind, "optimistic" if kind == "sqlite" else "skip-locked", request, tmp_path)
        for _ in range(NODES - 1)
    ]
    try:
        for i in range(NODES):
            stores[0].add(
                ScheduleSpec(f"k{i}", "cron", "0 0 1 1 *", "m:f", concurrency_key="billing", concurrency_limit=LIMIT),
                None,
            )
        for _ in range(ROUNDS):
            claims: list[Claim] = []
            for i, store in enumerate(stores):
                store.fire_now(f"k{i}")
                [claim] = [c for c in store.claim_due(f"n{i}", limit=NODES, buckets=None) if c.spec.name == f"k{i}"]
                claims.append(claim)
            answers = race(stores, claims)
            assert answers.count(None) == LIMIT, answers
            assert answers.count(f"concurrency key billing at its limit {LIMIT}") == NODES - LIMIT, answers
            # Every fire ends (the admitted ones as run, the others skipped): the key is free again.
            for i, (store, claim) in enumerate(zip(stores, claims, strict=True)):
                outcome = Outcome(RunStatus.SUCCEEDED) if answers[i] is None else Outcome(RunStatus.SKIPPED, answers[i])
                later = store.now() + timedelta(days=1)
                assert store.finish(f"n{i}", [Finish(claim, outcome, later)]) == [True]
        ran = [r for r in stores[0].history(limit=1000) if r.status is RunStatus.SUCCEEDED]
        assert len(ran) == LIMIT * ROUNDS
    finally:
        for store in stores:
            store.close()
