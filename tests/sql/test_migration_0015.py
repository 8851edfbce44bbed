"""Migration 0015 adds ``applied_version`` (the version the last ``tickwork apply`` left a
schedule at): a schedule stored before it was never applied (NULL), and the downgrade drops only
the column (the rows stay)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import create_engine, inspect, select

from tests.support.migrationrows import schedule_row, schedules_without
from tickwork.sql import migrations
from tickwork.sql.schema import schedules

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_0015_leaves_existing_schedules_never_applied_and_downgrades_to_them(url: str) -> None:
    engine = create_engine(url)
    # The table as 0014 left it: the insert names no applied_version column.
    old = schedules_without("applied_version")
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0014")
            conn.execute(old.insert().values(schedule_row(AT, id=1, version=3)))
        with engine.begin() as conn:
            migrations.upgrade(conn, "0015")
            assert conn.execute(select(schedules.c.version, schedules.c.applied_version)).one() == (3, None)
        with engine.begin() as conn:
            migrations.downgrade(conn, "0014")
            assert "applied_version" not in {c["name"] for c in inspect(conn).get_columns("tickwork_schedules")}
            assert conn.execute(select(old.c.name, old.c.version)).one() == ("old", 3)
    finally:
        engine.dispose()
