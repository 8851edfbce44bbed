"""The executors a node has configured (``tickwork_nodes.executors``, a JSON list as text), so
that ``tickwork jobs add`` can check a schedule's executor against the live nodes.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain nullable ADD COLUMN (as 0003, 0005): no SQLite table rebuild; the rows of running
    # older nodes read NULL, "not published".
    op.add_column("tickwork_nodes", sa.Column("executors", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tickwork_nodes") as batch:
        batch.drop_column("executors")
