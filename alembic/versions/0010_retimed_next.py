"""The next fire a write chose while a claim held the schedule (``tickwork_schedules.retimed_next``):
an update, enable, disable, pause or resume of a schedule whose run is in flight no longer writes
``next_fire``, which names the held fire and which the claim protocol's fence reads; the claim's
release applies it (docs/claim-protocol.md, "Writes while a run is in flight"). And the indexes of
the running runs (of a node, of a schedule, of a concurrency key) gain ``status`` as their second
column: MySQL/MariaDB have no partial indexes, and without it a node's release read its whole
history (a node start under load took 10-12.7 s on MariaDB with 1.3 M history rows).

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

_RUNNING = "status = 'running'"
#: The indexes of the running runs, by the column each leads with.
_RUNNING_INDEXES = (
    ("ix_tickwork_runs_running", "node"),
    ("ix_tickwork_runs_active_schedule", "schedule_id"),
    ("ix_tickwork_runs_active_key", "concurrency_key"),
)


def upgrade() -> None:
    # A nullable column: a plain ADD COLUMN on all three databases (no SQLite table rebuild).
    # A row marked retimed by an older tickwork had its next fire written into next_fire itself;
    # that row keeps it (the release below reads retimed_next only for rows retimed from now on).
    op.add_column("tickwork_schedules", sa.Column("retimed_next", UTCDateTime(), nullable=True))
    op.execute("UPDATE tickwork_schedules SET retimed_next = next_fire WHERE retimed")
    for name, column in _RUNNING_INDEXES:
        op.drop_index(name, table_name="tickwork_runs")
        op.create_index(
            name,
            "tickwork_runs",
            [column, "status"],
            sqlite_where=sa.text(_RUNNING),
            postgresql_where=sa.text(_RUNNING),
        )


def downgrade() -> None:
    for name, column in _RUNNING_INDEXES:
        op.drop_index(name, table_name="tickwork_runs")
        op.create_index(
            name, "tickwork_runs", [column], sqlite_where=sa.text(_RUNNING), postgresql_where=sa.text(_RUNNING)
        )
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.drop_column("retimed_next")
