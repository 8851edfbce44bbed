"""The next fire a write chose while a claim held the schedule (``tickwork_schedules.retimed_next``):
an update, enable, disable, pause or resume of a schedule whose run is in flight no longer writes
``next_fire``, which names the held fire and which the claim protocol's fence reads; the claim's
release applies it (docs/claim-protocol.md, "Writes while a run is in flight").

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A nullable column: a plain ADD COLUMN on all three databases (no SQLite table rebuild).
    # A row marked retimed by an older tickwork had its next fire written into next_fire itself;
    # that row keeps it (the release below reads retimed_next only for rows retimed from now on).
    op.add_column("tickwork_schedules", sa.Column("retimed_next", UTCDateTime(), nullable=True))
    op.execute("UPDATE tickwork_schedules SET retimed_next = next_fire WHERE retimed")


def downgrade() -> None:
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.drop_column("retimed_next")
