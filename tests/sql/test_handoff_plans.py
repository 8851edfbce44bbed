"""A hand-off's checks read the open hand-offs by index, never a schedule's history: every
statement :meth:`pending_handoffs` and :meth:`mark_stuck_handoffs` send reads the runs through
the open hand-offs' partial index (PostgreSQL, SQLite), the (schedule_id, status) index by a few
ranges (MySQL), or by primary key. As sent before, they read each schedule's whole history (or
the whole table) every batch of hand-offs: 0.4 s on PostgreSQL, 2.4 s on SQLite and 11 s on
MariaDB for 500 schedules beside 2 million finished runs (docs/benchmarks.md). Plans, not
timings: each statement sent is explained with its parameters."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select

from tests.support.stores import make_store
from tickwork.sql.schema import runs, schedules
from tickwork.sql.store import SQLStore
from tickwork.structures import SchedulePlan, ScheduleSpec

SCHEDULES = 150
HISTORY = 200  # finished runs per schedule


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLStore]:
    s = make_store(request.param, "optimistic", request, tmp_path)
    assert isinstance(s, SQLStore)
    specs = [ScheduleSpec(f"h{i:03d}", "cron", "* * * * *", "m:f", executor="celery") for i in range(SCHEDULES)]
    now = s.now()
    s.write_schedules(lambda _: SchedulePlan(create=specs), lambda _spec, at: at)
    with s.engine.begin() as conn:
        ids = list(conn.scalars(select(schedules.c.id).order_by(schedules.c.id)))
        rows: list[dict[str, Any]] = []
        for sid in ids:
            for n in range(1, HISTORY + 1):
                at = now - timedelta(minutes=n)
                rows.append(
                    {
                        "schedule_id": sid,
                        "scheduled_for": at,
                        "attempt": 1,
                        "status": "succeeded",
                        "node": "n1",
                        "started_at": at,
                        "finished_at": at,
                    }
                )
        # Three hand-offs still open, long past any timeout: the checks find and mark them.
        for sid, status in ((ids[0], "submitted"), (ids[1], "started"), (ids[2], "submitted")):
            rows.append(
                {
                    "schedule_id": sid,
                    "scheduled_for": now,
                    "attempt": 1,
                    "status": status,
                    "node": "n1",
                    "started_at": now - timedelta(hours=1),
                    "finished_at": now - timedelta(hours=1),
                }
            )
        s.operations.insert_many(conn, runs, rows)
    s.refresh_statistics()
    yield s
    s.close()


def _explain(store: SQLStore, statement: str, parameters: Any) -> str:
    dialect = store.engine.dialect.name
    prefix = "EXPLAIN QUERY PLAN " if dialect == "sqlite" else "EXPLAIN "
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql(prefix + statement, parameters).all()
        conn.rollback()
    if dialect == "mysql":
        # One row per table: (id, select_type, table, type, possible_keys, key, ...)
        return "\n".join(f"{r[2]} type={r[3]} key={r[5]} rows={r[8]}" for r in rows)
    return "\n".join(str(r[-1]) for r in rows)


def _runs_read_by_index(dialect: str, plan: str) -> bool:
    if "uq_tickwork_runs_fire" in plan:  # a schedule's history, in fire-time order
        return False
    if dialect == "postgresql":
        return "Seq Scan on tickwork_runs" not in plan
    if dialect == "sqlite":
        # A scan of the open hand-offs' partial index reads only the hand-offs still open.
        return not any(
            line.startswith("SCAN tickwork_runs") and "ix_tickwork_runs_open_handoffs" not in line
            for line in plan.splitlines()
        )
    return not any(
        line.startswith("tickwork_runs ") and (" type=ALL " in line or " type=index " in line)
        for line in plan.splitlines()
    )


def test_the_checks_of_a_hand_off_read_no_schedules_history(store: SQLStore) -> None:
    sent: list[tuple[str, Any]] = []

    def record(_c: Any, _cur: Any, statement: str, parameters: Any, _ctx: Any, many: bool) -> None:
        if "tickwork_runs" in statement and not many:
            sent.append((statement, parameters))

    keys = [("default", f"h{i:03d}") for i in range(SCHEDULES)]
    event.listen(store.engine, "before_cursor_execute", record)
    try:
        open_before = store.pending_handoffs(keys, report_timeout=3 * 3600)
        stuck = store.mark_stuck_handoffs("celery", 30, "not picked up")
        open_after = store.pending_handoffs(keys, report_timeout=60)
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    # What they found: the three open hand-offs, the two submitted ones past the pickup timeout,
    # then none left open once report_timeout (60 s) timed them out.
    assert sorted(r.status.value for r in open_before.values()) == ["started", "submitted", "submitted"]
    assert sorted(r.schedule for r in stuck) == ["h000", "h002"]
    assert open_after == {}
    assert sent, "no statement on the runs was sent"
    dialect = store.engine.dialect.name
    for statement, parameters in sent:
        plan = _explain(store, statement, parameters)
        assert _runs_read_by_index(dialect, plan), f"{statement}\n{plan}"


def test_the_stuck_hand_off_check_reads_the_open_hand_offs_once_where_they_have_their_own_index(
    store: SQLStore,
) -> None:
    """PostgreSQL and SQLite: one read of the open hand-offs' partial index, joined to the
    schedules, however many schedules the executor has (lists of their ids were one statement per
    1,000 of them); MySQL, without partial indexes, reads the executor's schedules, then their
    open hand-offs list by list (100 ids each)."""
    reads: list[str] = []

    def record(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, _many: bool) -> None:
        if statement.startswith("SELECT"):
            reads.append(statement)

    event.listen(store.engine, "before_cursor_execute", record)
    try:
        stuck = store.mark_stuck_handoffs("celery", 30, "not picked up")
    finally:
        event.remove(store.engine, "before_cursor_execute", record)
    assert sorted(r.schedule for r in stuck) == ["h000", "h002"]
    if store.engine.dialect.name == "mysql":
        # The executor's schedules, then their open hand-offs in ceil(150 / 100) lists of ids.
        assert len([r for r in reads if "FROM tickwork_schedules" in r and "tickwork_runs" not in r]) == 1, reads
        assert len([r for r in reads if "FROM tickwork_runs" in r and "schedule_id IN" in r]) == 2, reads
    else:
        assert [r for r in reads if "FROM tickwork_schedules" in r and "tickwork_runs" not in r] == [], reads
        assert len([r for r in reads if "JOIN tickwork_schedules" in r and "executor" in r]) == 1, reads
