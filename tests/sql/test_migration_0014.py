"""Migration 0014 adds schedule versions: a schedule stored before it is at version 0 with no
recorded version, a run recorded before it has no version, and the downgrade drops only what it
added (the rows stay)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import column, create_engine, inspect, select, table

from tests.support.migrationrows import schedule_row, schedules_without
from tickwork.sql import migrations
from tickwork.sql.schema import runs, schedules

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_0014_starts_existing_rows_at_version_0_and_downgrades_to_them(url: str) -> None:
    engine = create_engine(url)
    # The tables as 0013 left them: the inserts name no version column.
    old_schedules = schedules_without("version")
    old_runs = table("tickwork_runs", *(column(c.name, c.type) for c in runs.c if c.name != "version"))
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0013")
            conn.execute(old_schedules.insert().values(schedule_row(AT, id=1)))
            conn.execute(old_runs.insert().values(schedule_id=1, scheduled_for=AT, attempt=1, status="succeeded"))
        with engine.begin() as conn:
            migrations.upgrade(conn, "0014")
            assert conn.execute(select(schedules.c.version)).scalar_one() == 0
            assert conn.execute(select(runs.c.version)).scalar_one() is None
            assert "tickwork_schedule_versions" in inspect(conn).get_table_names()
        with engine.begin() as conn:
            migrations.downgrade(conn, "0013")
            names = inspect(conn).get_table_names()
            assert "tickwork_schedule_versions" not in names
            assert "version" not in {c["name"] for c in inspect(conn).get_columns("tickwork_schedules")}
            assert "version" not in {c["name"] for c in inspect(conn).get_columns("tickwork_runs")}
            assert conn.execute(select(old_schedules.c.name)).scalar_one() == "old"
            assert conn.execute(select(old_runs.c.status)).scalar_one() == "succeeded"
    finally:
        engine.dispose()
