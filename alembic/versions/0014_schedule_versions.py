"""Schedule versions (docs/cli.md#versions): every change of a schedule's definition is kept in
``tickwork_schedule_versions`` (its number, when, by whom, the changed fields and the whole
definition), the schedule row carries its current number (``tickwork_schedules.version``) and
every run the number it fired under (``tickwork_runs.version``).

Schedules stored before it start at version 0, which has no record: their first change is
version 1, and its changes show what they were before. Runs recorded before it have no version.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# As 0001 spells it (a migration keeps its own copy): SQLite aliases rowid only for INTEGER.
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # A new table and two added columns (one nullable, one with a constant default): plain ADD
    # COLUMN on all three databases, no SQLite table rebuild, so `tickwork db upgrade --sql` works.
    op.add_column("tickwork_schedules", sa.Column("version", sa.Integer, nullable=False, server_default="0"))
    op.add_column("tickwork_runs", sa.Column("version", sa.Integer, nullable=True))
    op.create_table(
        "tickwork_schedule_versions",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("schedule_id", _Id, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("changes", sa.JSON, nullable=False),
        sa.Column("definition", sa.JSON, nullable=False),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["tickwork_schedules.id"],
            name="fk_tickwork_schedule_versions_schedule_id_tickwork_schedules",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tickwork_schedule_versions"),
        sa.UniqueConstraint("schedule_id", "version", name="uq_tickwork_schedule_versions_version"),
    )


def downgrade() -> None:
    op.drop_table("tickwork_schedule_versions")
    with op.batch_alter_table("tickwork_runs") as batch:
        batch.drop_column("version")
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.drop_column("version")
