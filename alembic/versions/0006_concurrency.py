"""Concurrency: the key a run was admitted under, the indexes its admission counts with, and
the table of concurrency keys whose rows serialise admissions (docs/claim-protocol.md#concurrent-runs).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_RUNNING = "status = 'running'"


def upgrade() -> None:
    # Plain ADD COLUMN (as 0003, 0005): no SQLite table rebuild, so `tickwork db upgrade --sql` works.
    op.add_column("tickwork_runs", sa.Column("concurrency_key", sa.String(200), nullable=True))
    op.create_index(
        "ix_tickwork_runs_active_schedule",
        "tickwork_runs",
        ["schedule_id"],
        sqlite_where=sa.text(_RUNNING),
        postgresql_where=sa.text(_RUNNING),
    )
    op.create_index(
        "ix_tickwork_runs_active_key",
        "tickwork_runs",
        ["concurrency_key"],
        sqlite_where=sa.text(_RUNNING),
        postgresql_where=sa.text(_RUNNING),
    )
    op.create_table(
        "tickwork_concurrency_keys",
        sa.Column("key", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_tickwork_concurrency_keys"),
    )


def downgrade() -> None:
    op.drop_table("tickwork_concurrency_keys")
    op.drop_index("ix_tickwork_runs_active_key", table_name="tickwork_runs")
    op.drop_index("ix_tickwork_runs_active_schedule", table_name="tickwork_runs")
    with op.batch_alter_table("tickwork_runs") as batch:
        batch.drop_column("concurrency_key")
