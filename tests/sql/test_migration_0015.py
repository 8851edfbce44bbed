"""Migration 0015 adds ``applied_version`` (the version the last ``tickwork apply`` left a
schedule at): a schedule stored before it was never applied (NULL), and the downgrade drops only
the column (the rows stay)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import column, create_engine, inspect, select, table

from tickwork.sql import migrations
from tickwork.sql.schema import schedules

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_0015_leaves_existing_schedules_never_applied_and_downgrades_to_them(url: str) -> None:
    engine = create_engine(url)
    # The table as 0014 left it: the insert names no applied_version column.
    old = table("tickwork_schedules", *(column(c.name, c.type) for c in schedules.c if c.name != "applied_version"))
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0014")
            conn.execute(
                old.insert().values(
                    id=1,
                    name="old",
                    bucket=1,
                    trigger_kind="cron",
                    expression="0 * * * *",
                    executor="local",
                    target="m:f",
                    arguments={},
                    timeout_s=60.0,
                    version=3,
                    created_at=AT,
                    updated_at=AT,
                )
            )
        with engine.begin() as conn:
            migrations.upgrade(conn, "0015")
            assert conn.execute(select(schedules.c.version, schedules.c.applied_version)).one() == (3, None)
        with engine.begin() as conn:
            migrations.downgrade(conn, "0014")
            assert "applied_version" not in {c["name"] for c in inspect(conn).get_columns("tickwork_schedules")}
            assert conn.execute(select(old.c.name, old.c.version)).one() == ("old", 3)
    finally:
        engine.dispose()
