"""Per-schedule retry backoff; "run now" requests that arrive while a run is active.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.add_column(sa.Column("retry_backoff_s", sa.Double(), nullable=False, server_default="10"))
        batch.add_column(sa.Column("fire_requested_at", UTCDateTime, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.drop_column("fire_requested_at")
        batch.drop_column("retry_backoff_s")
