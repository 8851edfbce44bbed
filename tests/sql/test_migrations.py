"""The Alembic migrations and the declared SQLAlchemy metadata never drift, on every database:
upgrade revision by revision, downgrade to nothing, then the empty database's schema created at
once from the metadata, equal to the migrated one (Procrastinate's migration test idea)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import (
    Column,
    Connection,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    insert,
    inspect,
    select,
    update,
)

from tests.support.migrationrows import schedule_row
from tickwork.sql import migrations
from tickwork.sql.schema import (
    PARTIAL_INDEX_DIALECTS,
    PARTIAL_ONLY_INDEXES,
    UTCDateTime,
    backfills,
    metadata,
    nodes,
    schedules,
)


def _tables(engine_url: str) -> set[str]:
    engine = create_engine(engine_url)
    try:
        return {t for t in inspect(engine).get_table_names() if t.startswith("tickwork_")}
    finally:
        engine.dispose()


def _drift(conn: Connection) -> list[Any]:
    """What autogenerate would change to make the database ``tickwork.sql.schema``."""

    def declared_here(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        # An index of partial indexes only is declared for the databases that have them.
        return not (
            type_ == "index" and name in PARTIAL_ONLY_INDEXES and conn.dialect.name not in PARTIAL_INDEX_DIALECTS
        )

    context = MigrationContext.configure(
        conn,
        opts={"compare_type": True, "version_table": migrations.VERSION_TABLE, "include_object": declared_here},
    )
    return [
        d
        for d in compare_metadata(context, metadata)
        if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name == migrations.VERSION_TABLE)
    ]


def _schema(conn: Connection) -> dict[str, dict[str, Any]]:
    """tickwork's tables as the database reports them: columns (type, nullability, server
    default, autoincrement), primary key, foreign keys (with ON DELETE), indexes (with their
    partial predicate), unique and check constraints, each by name. Not the order of the columns:
    a migration can only add a column at the end, and every statement names its columns."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value if value is None or isinstance(value, str | int | float | bool) else str(value)

    reflected = inspect(conn)
    out = {}
    for table in sorted(t for t in reflected.get_table_names() if t.startswith("tickwork_")):
        out[table] = {
            "columns": {c["name"]: plain(c) for c in reflected.get_columns(table)},
            "primary key": plain(reflected.get_pk_constraint(table)),
            "foreign keys": sorted(map(repr, plain(reflected.get_foreign_keys(table)))),
            "indexes": sorted(map(repr, plain(reflected.get_indexes(table)))),
            "unique": sorted(map(repr, plain(reflected.get_unique_constraints(table)))),
            "checks": sorted(map(repr, plain(reflected.get_check_constraints(table)))),
        }
    return out


def test_upgrade_downgrade_create_matches_metadata(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Migrated revision by revision (from 0001: an empty database would take the shortcut below),
    # downgraded to nothing, then created at once from the metadata and stamped, as an empty
    # database is: both schemas are the metadata's, and the same in every reflected detail.
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            assert migrations.current_revision(conn) is None
            migrations.upgrade(conn, "0001")
            migrations.upgrade(conn)
            assert migrations.current_revision(conn) == migrations.head_revision()
        assert _tables(url) >= {"tickwork_schedules", "tickwork_runs", "tickwork_nodes"}
        with engine.connect() as conn:
            assert _drift(conn) == [], "migrations and tickwork.sql.schema disagree"
            migrated = _schema(conn)
        with engine.begin() as conn:
            migrations.downgrade(conn, "base")
        assert _tables(url) == {"tickwork_alembic_version"} or _tables(url) == set()

        def no_revisions(*args: object, **kwargs: object) -> None:
            raise AssertionError("an empty database ran the revisions one by one")

        monkeypatch.setattr(command, "upgrade", no_revisions)
        with engine.begin() as conn:
            migrations.upgrade(conn)
        with engine.connect() as conn:
            assert migrations.current_revision(conn) == migrations.head_revision()
            assert _drift(conn) == [], "tickwork.sql.schema does not create itself"
            created = _schema(conn)
        assert created.keys() == migrated.keys()
        for table in migrated:
            assert created[table] == migrated[table], f"{table}: created from the metadata != migrated"
    finally:
        engine.dispose()


def test_a_database_at_an_older_revision_migrates_step_by_step(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Only an empty database gets the schema at once: one at 0016 runs 0017, keeping its rows.
    engine = create_engine(url)
    at = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0016")
            # 0017 leaves the nodes table as it is.
            conn.execute(insert(nodes).values(id="n1", started_at=at, heartbeat_at=at))

        def no_create(connection: Connection) -> None:
            raise AssertionError("a database at 0016 was created anew")

        monkeypatch.setattr(migrations, "create_head", no_create)
        with engine.begin() as conn:
            assert not migrations.is_empty(conn)
            migrations.upgrade(conn)
            assert migrations.current_revision(conn) == migrations.head_revision()
            assert conn.execute(select(nodes.c.id, nodes.c.started_at)).all() == [("n1", at)]
    finally:
        engine.dispose()


def test_0008_adds_node_executors_and_keeps_the_records(url: str) -> None:
    # A node record written under 0007 (a running node of the tickwork before) reads NULL
    # executors after the upgrade, "not published"; the downgrade drops only the column.
    engine = create_engine(url)
    before = Table(
        "tickwork_nodes",
        MetaData(),
        Column("id", String(200)),
        Column("started_at", UTCDateTime),
        Column("heartbeat_at", UTCDateTime),
        Column("instance", String(64)),
    )
    at = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0007")
            conn.execute(insert(before).values(id="old", started_at=at, heartbeat_at=at, instance="i"))
        with engine.begin() as conn:
            migrations.upgrade(conn, "0008")
            assert migrations.current_revision(conn) == "0008"
            row = conn.execute(select(nodes).where(nodes.c.id == "old")).one()
            assert (row.instance, row.executors, row.heartbeat_at) == ("i", None, at)
            conn.execute(update(nodes).where(nodes.c.id == "old").values(executors='["local"]'))
        with engine.begin() as conn:
            migrations.downgrade(conn, "0007")
            assert "executors" not in {c["name"] for c in inspect(conn).get_columns("tickwork_nodes")}
            assert conn.execute(select(before.c.id, before.c.instance)).all() == [("old", "i")]
    finally:
        engine.dispose()


def test_0009_adds_backfill_overlap_and_keeps_the_queue(url: str) -> None:
    # A fire queued by a backfill under 0008 reads buffer_all, the default, after the upgrade;
    # the downgrade drops only the column and keeps the queue.
    engine = create_engine(url)
    at = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0008")
            conn.execute(
                insert(schedules).values(
                    name="s",
                    bucket=1,
                    trigger_kind="cron",
                    expression="0 * * * *",
                    executor="local",
                    target="m:f",
                    arguments={},
                    timeout_s=60.0,
                    created_at=at,
                    updated_at=at,
                )
            )
            schedule_id = conn.scalar(select(schedules.c.id).where(schedules.c.name == "s"))
            before = Table(
                "tickwork_backfills",
                MetaData(),
                Column("schedule_id", Integer),
                Column("scheduled_for", UTCDateTime),
                Column("created_at", UTCDateTime),
            )
            conn.execute(insert(before).values(schedule_id=schedule_id, scheduled_for=at, created_at=at))
        with engine.begin() as conn:
            migrations.upgrade(conn, "0009")
            assert migrations.current_revision(conn) == "0009"
            row = conn.execute(select(backfills)).one()
            assert (row.scheduled_for, row.overlap, bool(row.rerun)) == (at, "buffer_all", False)
        with engine.begin() as conn:
            migrations.downgrade(conn, "0008")
            assert "overlap" not in {c["name"] for c in inspect(conn).get_columns("tickwork_backfills")}
            assert conn.execute(select(before.c.scheduled_for)).all() == [(at,)]
    finally:
        engine.dispose()


def test_0010_keeps_the_next_fire_of_a_schedule_retimed_before_it(url: str) -> None:
    # Before 0010 a write during a run stored the new next fire in next_fire itself and marked the
    # row retimed, for the release to keep it; after it the release reads retimed_next, so the
    # upgrade copies it there. A row not retimed gets none. The downgrade drops only the column.
    engine = create_engine(url)
    at = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    try:
        with engine.begin() as conn:
            migrations.upgrade(conn, "0009")
            running = {"state": "running", "next_fire": at}
            conn.execute(insert(schedules).values(schedule_row(at, name="retimed", retimed=True, **running)))
            conn.execute(insert(schedules).values(schedule_row(at, name="plain", **running)))
        with engine.begin() as conn:
            migrations.upgrade(conn, "0010")
            assert migrations.current_revision(conn) == "0010"
            got = dict(conn.execute(select(schedules.c.name, schedules.c.retimed_next)).tuples().all())
            assert got == {"retimed": at, "plain": None}
        with engine.begin() as conn:
            migrations.downgrade(conn, "0009")
            assert "retimed_next" not in {c["name"] for c in inspect(conn).get_columns("tickwork_schedules")}
    finally:
        engine.dispose()
