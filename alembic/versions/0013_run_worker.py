"""The queue worker that ran a hand-off (``tickwork_runs.worker``): the Celery, RQ and Dramatiq
worker sides name themselves when they report a run started (Celery's ``celery@host``, an RQ
worker's name, ``host:pid`` for Dramatiq), so that ``tickwork history`` and the dashboard say
which worker ran it (docs/handoff.md#which-worker-ran-it).

Runs recorded before it keep NULL: no report named its worker.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A nullable column: a plain ADD COLUMN on all three databases (no SQLite table rebuild, so
    # `tickwork db upgrade --sql` works and the history table, the largest, is not copied).
    op.add_column("tickwork_runs", sa.Column("worker", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tickwork_runs") as batch:
        batch.drop_column("worker")
