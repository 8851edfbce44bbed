"""Migration 0011 adds ``tickwork_schedules.fault_kind`` and gives the rows parked before it their
kind, from the engine's wording of the time (the one place that reads those words, once)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import create_engine, insert, inspect, select

from tests.support.migrationrows import schedule_row
from tickwork.sql import migrations
from tickwork.sql.schema import schedules


def test_0011_gives_parked_rows_their_kind_and_downgrades_to_the_column_alone(url: str) -> None:
    engine = create_engine(url)
    at = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    faults = {
        "no-executor": "TickworkError: executor 'http' is not configured on node n1",
        "bad-zone": "TriggerError: unknown time zone 'Mars/Olympus'",
        "fine": None,
    }
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0010")
            for name, fault in faults.items():
                # The table as 0010 left it (the insert names no fault_kind).
                conn.execute(insert(schedules).values(schedule_row(at, name=name, fault=fault)))
        with engine.begin() as conn:
            migrations.upgrade(conn, "0011")
            kinds = {r.name: r.fault_kind for r in conn.execute(select(schedules.c.name, schedules.c.fault_kind))}
            assert kinds == {"no-executor": "executor_not_configured", "bad-zone": "error", "fine": None}
        with engine.begin() as conn:
            migrations.downgrade(conn, "0010")
            assert "fault_kind" not in {c["name"] for c in inspect(conn).get_columns("tickwork_schedules")}
            assert {r.name: r.fault for r in conn.execute(select(schedules.c.name, schedules.c.fault))} == faults
    finally:
        engine.dispose()
