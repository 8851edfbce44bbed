"""Migration 0017 adds namespaces: a schedule stored before it (and its runs) moves to the
``default`` namespace, the same name can then be stored in another namespace but not twice in one,
and the downgrade drops the column (the rows stay)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine, inspect, select
from sqlalchemy.exc import IntegrityError

from tests.support.migrationrows import schedule_row, schedules_without
from tickwork.sql import migrations
from tickwork.sql.schema import runs, schedules

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_0017_moves_existing_schedules_to_default_and_keys_names_by_namespace(url: str) -> None:
    engine = create_engine(url)
    # The table as 0016 left it: the insert names no namespace column.
    old_schedules = schedules_without("namespace")
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0016")
            conn.execute(old_schedules.insert().values(id=1, **schedule_row(AT, name="old")))
            conn.execute(runs.insert().values(schedule_id=1, scheduled_for=AT, attempt=1, status="succeeded"))
        with engine.begin() as conn:
            migrations.upgrade(conn, "0017")
            assert conn.execute(select(schedules.c.name, schedules.c.namespace)).one() == ("old", "default")
            assert conn.execute(select(runs.c.status)).scalar_one() == "succeeded"
            conn.execute(schedules.insert().values(id=2, **schedule_row(AT, name="old", namespace="team-b")))
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(schedules.insert().values(id=3, **schedule_row(AT, name="old", namespace="team-b")))
        with engine.begin() as conn:
            conn.execute(schedules.delete().where(schedules.c.namespace == "team-b"))
            migrations.downgrade(conn, "0016")
            assert "namespace" not in {c["name"] for c in inspect(conn).get_columns("tickwork_schedules")}
            assert conn.execute(select(old_schedules.c.name)).scalar_one() == "old"
            assert conn.execute(select(runs.c.status)).scalar_one() == "succeeded"
    finally:
        engine.dispose()
