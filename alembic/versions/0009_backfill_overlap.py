"""How a queued backfill's fires run beside one another (``tickwork_backfills.overlap``):
``buffer_all`` (one at a time, oldest first; the default) or ``allow`` (docs/cluster.md#backfill).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A NOT NULL column with a server default: rows queued before the upgrade read buffer_all,
    # the new default. A plain ADD COLUMN on all three databases (no SQLite table rebuild).
    op.add_column(
        "tickwork_backfills",
        sa.Column("overlap", sa.String(20), nullable=False, server_default=sa.text("'buffer_all'")),
    )


def downgrade() -> None:
    with op.batch_alter_table("tickwork_backfills") as batch:
        batch.drop_column("overlap")
