"""A start window's round (the start, the takeover, the ends) on the server stores is one
transaction with at most one locking read: on PostgreSQL one statement, on MySQL/MariaDB one
read of the rows of all three parts, then writes by key (it was three transactions there, each
with its own locking read). What each part decides is the contract's (contract_rounds.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import event

from tickwork.sql.store import SQLStore
from tickwork.structures import Finish, Outcome, RunStatus, ScheduleSpec, ScheduleState
from tickwork.testing.contract_starts import claim_ahead, wait_until

OK = Outcome(RunStatus.SUCCEEDED)


def test_a_round_is_one_transaction_with_one_locking_read(server_store: SQLStore) -> None:
    store = server_store
    # 3 s ahead: the add and the claim ahead must both happen before the fire is due, and a loaded
    # MariaDB took more than 1 s for them once.
    late = claim_ahead(store, "late", 3.0, node="n2")
    wait_until(store, late.scheduled_for + timedelta(seconds=0.1))
    store.add(ScheduleSpec(name="due", trigger_kind="cron", expression="* * * * *", target="m:f"), store.now())
    (due,) = store.claim_due("n1", limit=10, buckets=None)
    held = claim_ahead(store, "held", 30.0)
    next_fire = due.scheduled_for + timedelta(minutes=1)

    sent: list[str] = []
    commits: list[object] = []

    def on_execute(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, _many: bool) -> None:
        sent.append(statement)

    def on_commit(conn: object) -> None:
        commits.append(conn)

    event.listen(store.engine, "before_cursor_execute", on_execute)
    event.listen(store.engine, "commit", on_commit)
    try:
        done = store.start_round("n1", [held], 0.05, 60.0, take_over=True, finishes=[Finish(due, OK, next_fire)])
    finally:
        event.remove(store.engine, "before_cursor_execute", on_execute)
        event.remove(store.engine, "commit", on_commit)
    assert done.granted == (True,) and done.taken_over == 1 and done.ended == (True,) and done.error is None
    assert len(commits) == 1
    assert sum("FOR UPDATE" in s.upper() for s in sent) <= 1, sent
    assert store.get("held").state is ScheduleState.RUNNING
    assert store.get("late").state is ScheduleState.IDLE
    assert store.get("due").next_fire == next_fire
