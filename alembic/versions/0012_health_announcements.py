"""The health state last announced per schedule (``tickwork_health_announcements``): what the
health sweep compares each schedule's health with, so that a change is announced once per cluster,
a schedule already unhealthy when a node starts sweeping is announced, a restart announces
nothing again, and a long failure is announced again after ``[health] repeat_interval``
(docs/observability.md#health-changes).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# As 0001 spells it (a migration keeps its own copy): SQLite aliases rowid only for INTEGER.
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # A new table only: no rebuild of an existing one on SQLite, so `tickwork db upgrade --sql`
    # works. It starts empty: the first sweep records the states it finds and announces the
    # unhealthy ones.
    op.create_table(
        "tickwork_health_announcements",
        sa.Column("schedule_id", _Id, nullable=False, autoincrement=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("alerting", sa.Boolean, nullable=False),
        sa.Column("since", UTCDateTime, nullable=False),
        sa.Column("announced_at", UTCDateTime, nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["tickwork_schedules.id"],
            name="fk_tickwork_health_announcements_schedule_id_tickwork_schedules",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("schedule_id", name="pk_tickwork_health_announcements"),
    )


def downgrade() -> None:
    op.drop_table("tickwork_health_announcements")
