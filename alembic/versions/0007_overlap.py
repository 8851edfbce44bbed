"""Run status ``cancelled``: a run stopped because its schedule's next fire came due
(``overlap = "cancel_other"``, docs/triggers.md#overlap).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_NAME = "ck_tickwork_runs_status"
_OLD = "status IN ('running', 'succeeded', 'failed', 'timed_out', 'skipped', 'abandoned', 'submitted', 'started')"
_NEW = (
    "status IN ('running', 'succeeded', 'failed', 'timed_out', 'skipped', 'abandoned', 'submitted', 'started', "
    "'cancelled')"
)
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _runs(check: str) -> sa.Table:
    """The runs table as 0001 created it and 0006 extended it (the concurrency key and its two
    indexes), with ``check`` as its status constraint. SQLite cannot
    alter a constraint: batch mode copies the table, and copying from this definition (not from
    reflection) keeps ``tickwork db upgrade --sql`` working offline."""
    return sa.Table(
        "tickwork_runs",
        sa.MetaData(),
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
        sa.Column("concurrency_key", sa.String(200), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tickwork_runs"),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["tickwork_schedules.id"],
            name="fk_tickwork_runs_schedule_id_tickwork_schedules",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("schedule_id", "scheduled_for", "attempt", name="uq_tickwork_runs_fire"),
        sa.CheckConstraint(check, name=_NAME),
        sa.Index(
            "ix_tickwork_runs_running",
            "node",
            sqlite_where=sa.text("status = 'running'"),
        ),
        sa.Index("ix_tickwork_runs_active_schedule", "schedule_id", sqlite_where=sa.text("status = 'running'")),
        sa.Index("ix_tickwork_runs_active_key", "concurrency_key", sqlite_where=sa.text("status = 'running'")),
    )


def _replace_check(old: str, new: str) -> None:
    if op.get_context().dialect.name == "sqlite":
        with op.batch_alter_table("tickwork_runs", copy_from=_runs(old), recreate="always") as batch:
            batch.drop_constraint(op.f(_NAME), type_="check")
            batch.create_check_constraint(op.f(_NAME), sa.text(new))
        return
    op.drop_constraint(op.f(_NAME), "tickwork_runs", type_="check")
    op.create_check_constraint(op.f(_NAME), "tickwork_runs", sa.text(new))


def upgrade() -> None:
    _replace_check(_OLD, _NEW)


def downgrade() -> None:
    # A cancelled row would violate the old constraint: it ends as abandoned, saying what it was.
    op.execute(
        sa.text(
            "UPDATE tickwork_runs SET status = 'abandoned', "
            "error = 'cancelled (status removed by a downgrade)' WHERE status = 'cancelled'"
        )
    )
    _replace_check(_NEW, _OLD)
