"""Schedule semantics: the rarely set options as one JSON column (``options``), the consecutive
failures counted for ``pause_after_failures``, and why, by whom, since and until when a schedule
is paused.

Revision ID: 0005
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0005"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs (as 0003): no SQLite table rebuild, so `tickwork db upgrade --sql` works.
    op.add_column("tickwork_schedules", sa.Column("options", sa.JSON(none_as_null=True), nullable=True))
    op.add_column("tickwork_schedules", sa.Column("failures", sa.Integer, nullable=False, server_default="0"))
    op.add_column("tickwork_schedules", sa.Column("paused_note", sa.Text, nullable=True))
    op.add_column("tickwork_schedules", sa.Column("paused_by", sa.String(200), nullable=True))
    op.add_column("tickwork_schedules", sa.Column("paused_at", UTCDateTime, nullable=True))
    op.add_column("tickwork_schedules", sa.Column("paused_until", UTCDateTime, nullable=True))
    op.create_index("ix_tickwork_schedules_paused_until", "tickwork_schedules", ["paused_until"])


def downgrade() -> None:
    op.drop_index("ix_tickwork_schedules_paused_until", table_name="tickwork_schedules")
    with op.batch_alter_table("tickwork_schedules") as batch:
        for column in ("paused_until", "paused_at", "paused_by", "paused_note", "failures", "options"):
            batch.drop_column(column)
