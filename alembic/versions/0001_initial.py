"""Initial schema: schedules, runs (history) and nodes.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "tickwork_schedules",
        sa.Column("id", _Id, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("module", sa.String(200), nullable=True),
        sa.Column("bucket", sa.Integer, nullable=False),
        sa.Column("trigger_kind", sa.String(32), nullable=False),
        sa.Column("expression", sa.Text, nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False, server_default="UTC"),
        sa.Column("executor", sa.String(64), nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("arguments", sa.JSON, nullable=False),
        # Double (since the MySQL store): double precision everywhere; PostgreSQL and SQLite get
        # the same column type plain Float gave them, so existing databases need no migration.
        sa.Column("timeout_s", sa.Double(), nullable=False),
        sa.Column("misfire", sa.String(8), nullable=True),
        sa.Column("retries", sa.Integer, nullable=False, server_default="0"),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.text("true")),
        sa.Column("next_fire", UTCDateTime, nullable=True),
        sa.Column("state", sa.String(16), nullable=False, server_default="idle"),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("claimed_at", UTCDateTime, nullable=True),
        sa.Column("claim_seq", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tickwork_schedules"),
        sa.UniqueConstraint("name", name="uq_tickwork_schedules_name"),
        sa.CheckConstraint("state IN ('idle', 'running')", name="ck_tickwork_schedules_state"),
        sa.CheckConstraint(
            "misfire IS NULL OR misfire IN ('skip', 'once', 'all')", name="ck_tickwork_schedules_misfire"
        ),
    )
    op.create_index(
        "ix_tickwork_schedules_due",
        "tickwork_schedules",
        ["next_fire"],
        sqlite_where=sa.text("enabled AND state = 'idle'"),
        postgresql_where=sa.text("enabled AND state = 'idle'"),
    )
    op.create_index(
        "ix_tickwork_schedules_claimed",
        "tickwork_schedules",
        ["claimed_by", "claimed_at"],
        sqlite_where=sa.text("state = 'running'"),
        postgresql_where=sa.text("state = 'running'"),
    )
    op.create_index("ix_tickwork_schedules_module", "tickwork_schedules", ["module"])
    op.create_table(
        "tickwork_runs",
        sa.Column("id", _Id, primary_key=True, autoincrement=True),
        sa.Column("schedule_id", _Id, nullable=False),
        sa.Column("scheduled_for", UTCDateTime, nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False, server_default="1"),
        sa.Column("claim_seq", sa.BigInteger, nullable=True),
        sa.Column("node", sa.String(200), nullable=True),
        sa.Column("started_at", UTCDateTime, nullable=True),
        sa.Column("finished_at", UTCDateTime, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tickwork_runs"),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["tickwork_schedules.id"],
            name="fk_tickwork_runs_schedule_id_tickwork_schedules",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("schedule_id", "scheduled_for", "attempt", name="uq_tickwork_runs_fire"),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed', 'timed_out', 'skipped', 'abandoned')",
            name="ck_tickwork_runs_status",
        ),
    )
    op.create_index(
        "ix_tickwork_runs_running",
        "tickwork_runs",
        ["node"],
        sqlite_where=sa.text("status = 'running'"),
        postgresql_where=sa.text("status = 'running'"),
    )
    op.create_table(
        "tickwork_nodes",
        sa.Column("id", sa.String(200), nullable=False),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.Column("heartbeat_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tickwork_nodes"),
    )


def downgrade() -> None:
    op.drop_table("tickwork_nodes")
    op.drop_index("ix_tickwork_runs_running", table_name="tickwork_runs")
    op.drop_table("tickwork_runs")
    op.drop_index("ix_tickwork_schedules_module", table_name="tickwork_schedules")
    op.drop_index("ix_tickwork_schedules_claimed", table_name="tickwork_schedules")
    op.drop_index("ix_tickwork_schedules_due", table_name="tickwork_schedules")
    op.drop_table("tickwork_schedules")
