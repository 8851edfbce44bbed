"""Parked schedules (the fault that stopped a schedule from firing), trigger changes made while a
run was active (``retimed``), and a per-process instance token for node records.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs on both databases: a batch would make Alembic rebuild the SQLite table for
    # the expression default, which needs reflection (impossible with `tickwork db upgrade --sql`).
    op.add_column("tickwork_schedules", sa.Column("fault", sa.Text, nullable=True))
    op.add_column(
        "tickwork_schedules", sa.Column("retimed", sa.Boolean, nullable=False, server_default=sa.text("false"))
    )
    op.add_column("tickwork_nodes", sa.Column("instance", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tickwork_nodes") as batch:
        batch.drop_column("instance")
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.drop_column("retimed")
        batch.drop_column("fault")
