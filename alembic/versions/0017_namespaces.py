"""Namespaces (docs/teams.md): every schedule belongs to one (``tickwork_schedules.namespace``,
``default`` for those stored before), and a name is unique within its namespace: the unique
constraint on ``name`` becomes one on ``(namespace, name)``. A partial index on
``(namespace, next_fire)`` of the claimable rows serves the fair claim's turns.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_CLAIMABLE = "enabled AND state = 'idle'"
# As 0001 spells it (a migration keeps its own copy): SQLite aliases rowid only for INTEGER.
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _schedules_0016() -> sa.Table:
    """``tickwork_schedules`` as 0016 left it (0015 added ``applied_version``): what SQLite's table
    rebuild copies from, so that the migration needs no reflection (``tickwork db upgrade --sql``
    has no database to reflect) and the partial indexes keep their predicates."""
    table = sa.Table(
        "tickwork_schedules",
        sa.MetaData(),
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("module", sa.String(200), nullable=True),
        sa.Column("bucket", sa.Integer, nullable=False),
        sa.Column("trigger_kind", sa.String(32), nullable=False),
        sa.Column("expression", sa.Text, nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False, server_default="UTC"),
        sa.Column("executor", sa.String(64), nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("arguments", sa.JSON, nullable=False),
        sa.Column("timeout_s", sa.Double(), nullable=False),
        sa.Column("misfire", sa.String(8), nullable=True),
        sa.Column("retries", sa.Integer, nullable=False, server_default="0"),
        sa.Column("retry_backoff_s", sa.Double(), nullable=False, server_default="10"),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.text("true")),
        sa.Column("next_fire", UTCDateTime, nullable=True),
        sa.Column("state", sa.String(16), nullable=False, server_default="idle"),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("claimed_at", UTCDateTime, nullable=True),
        sa.Column("claim_seq", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("fire_requested_at", UTCDateTime, nullable=True),
        sa.Column("fault", sa.Text, nullable=True),
        sa.Column("fault_kind", sa.String(32), nullable=True),
        sa.Column("retimed", sa.Boolean, nullable=False, server_default=sa.text("false")),
        sa.Column("retimed_next", UTCDateTime, nullable=True),
        sa.Column("options", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("run_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("paused_note", sa.Text, nullable=True),
        sa.Column("paused_by", sa.String(200), nullable=True),
        sa.Column("paused_at", UTCDateTime, nullable=True),
        sa.Column("paused_until", UTCDateTime, nullable=True),
        sa.Column("version", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("applied_version", sa.Integer, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tickwork_schedules"),
        sa.UniqueConstraint("name", name="uq_tickwork_schedules_name"),
        sa.CheckConstraint("state IN ('idle', 'running')", name="ck_tickwork_schedules_state"),
        sa.CheckConstraint(
            "misfire IS NULL OR misfire IN ('skip', 'once', 'all')", name="ck_tickwork_schedules_misfire"
        ),
    )
    sa.Index(
        "ix_tickwork_schedules_due",
        table.c.next_fire,
        sqlite_where=sa.text(_CLAIMABLE),
        postgresql_where=sa.text(_CLAIMABLE),
    )
    sa.Index(
        "ix_tickwork_schedules_claimed",
        table.c.claimed_by,
        table.c.claimed_at,
        sqlite_where=sa.text("state = 'running'"),
        postgresql_where=sa.text("state = 'running'"),
    )
    sa.Index("ix_tickwork_schedules_module", table.c.module)
    sa.Index("ix_tickwork_schedules_paused_until", table.c.paused_until)
    return table


def upgrade() -> None:
    # The batch mode rebuilds the table on SQLite (a unique constraint cannot be dropped there)
    # and alters it in place on PostgreSQL and MySQL.
    with op.batch_alter_table("tickwork_schedules", copy_from=_schedules_0016()) as batch:
        batch.add_column(sa.Column("namespace", sa.String(100), nullable=False, server_default="default"))
        batch.drop_constraint("uq_tickwork_schedules_name", type_="unique")
        batch.create_unique_constraint("uq_tickwork_schedules_name", ["namespace", "name"])
    op.create_index(
        "ix_tickwork_schedules_due_namespace",
        "tickwork_schedules",
        ["namespace", "next_fire"],
        sqlite_where=sa.text(_CLAIMABLE),
        postgresql_where=sa.text(_CLAIMABLE),
    )


def downgrade() -> None:
    op.drop_index("ix_tickwork_schedules_due_namespace", table_name="tickwork_schedules")
    with op.batch_alter_table("tickwork_schedules") as batch:
        batch.drop_constraint("uq_tickwork_schedules_name", type_="unique")
        batch.create_unique_constraint("uq_tickwork_schedules_name", ["name"])
        batch.drop_column("namespace")
