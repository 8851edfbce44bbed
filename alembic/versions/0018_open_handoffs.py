"""An index of the open hand-offs (runs ``submitted`` or ``started``), partial, on PostgreSQL
and SQLite: a hand-off's checks read those runs without reading each schedule's history
(``tickwork.sql.schema.OPEN_HANDOFF``). MySQL has no partial index; its ``(schedule_id,
status)`` index serves them there, and this revision changes nothing on it.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# A migration keeps its own copy of the predicate.
_OPEN = "status IN ('submitted', 'started')"


def _partial() -> bool:
    return op.get_context().dialect.name in ("postgresql", "sqlite")


def upgrade() -> None:
    if _partial():
        op.create_index(
            "ix_tickwork_runs_open_handoffs",
            "tickwork_runs",
            ["schedule_id"],
            sqlite_where=sa.text(_OPEN),
            postgresql_where=sa.text(_OPEN),
        )


def downgrade() -> None:
    if _partial():
        op.drop_index("ix_tickwork_runs_open_handoffs", table_name="tickwork_runs")
