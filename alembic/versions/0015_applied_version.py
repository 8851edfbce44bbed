"""Schedules as code (docs/schedules-in-git.md): ``tickwork_schedules.applied_version`` is the
number of the definition the last ``tickwork apply`` left a schedule at (NULL: never applied).
A schedule whose ``version`` has moved past it was changed since by something else: drift, whose
versions (``tickwork_schedule_versions``) say who changed it, when and what.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A nullable column: plain ADD COLUMN on all three databases (no SQLite table rebuild).
    op.add_column("tickwork_schedules", sa.Column("applied_version", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.drop_column("applied_version")
