"""The Alembic migrations and the declared SQLAlchemy metadata never drift, on every database;
upgrade from empty, downgrade to nothing, upgrade again (Procrastinate's migration test idea)."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from tickwork.sql import migrations
from tickwork.sql.schema import metadata
from tickwork_mysql.store import sqlalchemy_url


@pytest.fixture(params=["sqlite", "postgres", "mysql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    if request.param == "mysql":
        return sqlalchemy_url(request.getfixturevalue("mysql_url"))
    return str(request.getfixturevalue("postgres_url"))


def _tables(engine_url: str) -> set[str]:
    engine = create_engine(engine_url)
    try:
        return {t for t in inspect(engine).get_table_names() if t.startswith("tickwork_")}
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade_matches_metadata(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            assert migrations.current_revision(conn) is None
            migrations.upgrade(conn)
            assert migrations.current_revision(conn) == migrations.head_revision()
        assert _tables(url) >= {"tickwork_schedules", "tickwork_runs", "tickwork_nodes"}
        with engine.begin() as conn:
            migrations.downgrade(conn, "base")
        assert _tables(url) == {"tickwork_alembic_version"} or _tables(url) == set()
        with engine.begin() as conn:
            migrations.upgrade(conn)
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "version_table": migrations.VERSION_TABLE}
            )
            diff = [
                d
                for d in compare_metadata(context, metadata)
                if not (isinstance(d, tuple) and d[0] == "remove_table" and d[1].name == migrations.VERSION_TABLE)
            ]
        assert diff == [], f"migrations and tickwork.sql.schema disagree: {diff}"
    finally:
        engine.dispose()
