"""Schedule semantics: the rarely set options as one JSON column (``options``), the consecutive
failures counted for ``pause_after_failures``, why, by whom, since and until when a schedule
is paused, and the queue of backfilled fire times.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

# SQLite only aliases rowid for INTEGER PRIMARY KEY, not BIGINT (as the schema's Id).
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs (as 0003): no SQLite table rebuild, so `tickwork db upgrade --sql` works.
    op.add_column("tickwork_schedules", sa.Column("options", sa.JSON(none_as_null=True), nullable=True))
    op.add_column("tickwork_schedules", sa.Column("failures", sa.Integer, nullable=False, server_default="0"))
    op.add_column("tickwork_schedules", sa.Column("run_count", sa.Integer, nullable=False, server_default="0"))
    op.add_column("tickwork_schedules", sa.Column("paused_note", sa.Text, nullable=True))
    op.add_column("tickwork_schedules", sa.Column("paused_by", sa.String(200), nullable=True))
    op.add_column("tickwork_schedules", sa.Column("paused_at", UTCDateTime, nullable=True))
    op.add_column("tickwork_schedules", sa.Column("paused_until", UTCDateTime, nullable=True))
    op.create_index("ix_tickwork_schedules_paused_until", "tickwork_schedules", ["paused_until"])
    op.create_table(
        "tickwork_backfills",
        sa.Column("id", _Id, primary_key=True, autoincrement=True),
        sa.Column("schedule_id", _Id, nullable=False),
        sa.Column("scheduled_for", UTCDateTime, nullable=False),
        sa.Column("rerun", sa.Boolean, nullable=False, server_default=sa.text("false")),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tickwork_backfills"),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["tickwork_schedules.id"],
            name="fk_tickwork_backfills_schedule_id_tickwork_schedules",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("schedule_id", "scheduled_for", name="uq_tickwork_backfills_fire"),
    )


def downgrade() -> None:
    op.drop_table("tickwork_backfills")
    op.drop_index("ix_tickwork_schedules_paused_until", table_name="tickwork_schedules")
    with op.batch_alter_table("tickwork_schedules") as batch:
        for column in ("paused_until", "paused_at", "paused_by", "paused_note", "run_count", "failures", "options"):
            batch.drop_column(column)
