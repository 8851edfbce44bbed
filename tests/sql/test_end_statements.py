"""A batch of ends is written in a few statements whatever its size, on every SQL store: not one
statement per end (PyMySQL sends an executemany of an UPDATE as one statement per row), and each
end still lands on its own row with its own values."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from tests.support.stores import make_store
from tickwork.sql.store import SQLStore
from tickwork.structures import Finish, Outcome, RunStatus, ScheduleState
from tickwork.testing.contract_helpers import claim_all, spec

ENDS = 40


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLStore]:
    claim = "optimistic" if request.param == "sqlite" else "skip-locked"
    store = make_store(request.param, claim, request, tmp_path)
    assert isinstance(store, SQLStore)
    yield store
    store.close()


def test_a_batch_of_ends_is_a_few_statements_each_landing_on_its_own_row(sql_store: SQLStore) -> None:
    t = sql_store.now()
    for i in range(ENDS):
        sql_store.add(spec(f"s{i:02}"), t)
    claims = sorted(claim_all(sql_store), key=lambda c: c.spec.name)
    assert len(claims) == ENDS
    ended = t + timedelta(milliseconds=7)

    def finish_of(i: int) -> Finish:
        c = claims[i]
        failed = i % 3 == 0
        return Finish(
            c,
            Outcome(RunStatus.FAILED, error=f"boom {i}") if failed else Outcome(RunStatus.SUCCEEDED),
            # Every fifth schedule never fires again; the others each get their own next fire.
            None if i % 5 == 4 else t + timedelta(minutes=i + 1),
            finished_at=ended + timedelta(milliseconds=i) if i % 2 else None,
            started_at=t + timedelta(milliseconds=i) if i % 4 == 1 else None,
        )

    sent: list[int] = []

    def count(_c: Any, _cur: Any, _stmt: str, params: Any, _ctx: Any, executemany: bool) -> None:
        sent.append(len(params) if executemany else 1)

    event.listen(sql_store.engine, "before_cursor_execute", count)
    try:
        landed = sql_store.finish("n1", [finish_of(i) for i in range(ENDS)])
    finally:
        event.remove(sql_store.engine, "before_cursor_execute", count)
    assert landed == [True] * ENDS
    # The fences, the releases and the run ends (and the transaction's own statements): a few,
    # not one or two per end.
    assert sum(sent) <= 6, sent

    after = sql_store.now()
    history = {r.schedule: r for r in sql_store.history(limit=1000)}
    for i in range(ENDS):
        f = finish_of(i)
        s = sql_store.get(f"s{i:02}")
        assert s.state is ScheduleState.IDLE and s.claimed_by is None
        assert s.next_fire == f.next_fire
        run = history[f"s{i:02}"]
        assert run.status is f.outcome.status and run.error == f.outcome.error
        if f.finished_at is not None:
            assert run.finished_at == f.finished_at
        else:
            assert run.finished_at is not None and claims[i].claimed_at <= run.finished_at <= after
        assert run.started_at == (f.started_at if f.started_at is not None else claims[i].claimed_at)
