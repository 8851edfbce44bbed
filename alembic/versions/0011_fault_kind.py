"""The kind of a parked schedule's fault (``tickwork_schedules.fault_kind``): readers (``tickwork
jobs show``'s "to fix", the admin API's ``fault_kind``) tell a missing executor from any other
fault by this value, not by the words of ``fault`` (docs/architecture.md#faults).

Rows parked before it get their kind from the engine's wording of the time, once, here: the
engine wrote ``executor 'NAME' is not configured on node ID`` for a missing executor.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A nullable column: a plain ADD COLUMN on all three databases (no SQLite table rebuild).
    op.add_column("tickwork_schedules", sa.Column("fault_kind", sa.String(32), nullable=True))
    op.execute(
        "UPDATE tickwork_schedules SET fault_kind = CASE WHEN fault LIKE '%is not configured on node%' "
        "THEN 'executor_not_configured' ELSE 'error' END WHERE fault IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.drop_column("fault_kind")
