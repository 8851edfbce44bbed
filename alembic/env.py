"""Alembic environment for tickwork; run through ``tickwork db upgrade`` (see tickwork.sql.migrations)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from tickwork.sql.schema import metadata

config = context.config
connection = config.attributes.get("connection")


def _run(conn: object) -> None:
    context.configure(
        connection=conn,  # type: ignore[arg-type]
        target_metadata=metadata,
        version_table="tickwork_alembic_version",
        render_as_batch=True,  # SQLite cannot ALTER most things in place
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    # `tickwork db upgrade --sql`: the statements as text, for a DBA to review and run.
    context.configure(
        dialect_name=config.attributes["offline_dialect"],
        literal_binds=True,
        target_metadata=metadata,
        version_table="tickwork_alembic_version",
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()
elif connection is not None:
    _run(connection)
else:
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "sqlite:///tickwork.db")
    with engine.connect() as conn:
        _run(conn)
