"""Run statuses of hand-off executors (Celery, RQ, Dramatiq): ``submitted`` and ``started``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_NAME = "ck_tickwork_runs_status"
# The name 0001 actually gave the constraint on PostgreSQL and MySQL: its explicit name went
# through the naming convention once more. 0004 names it as tickwork.sql.schema does.
_OLD_NAME = "ck_tickwork_runs_ck_tickwork_runs_status"
_OLD = "status IN ('running', 'succeeded', 'failed', 'timed_out', 'skipped', 'abandoned')"
_NEW = "status IN ('running', 'succeeded', 'failed', 'timed_out', 'skipped', 'abandoned', 'submitted', 'started')"
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _runs(check: str) -> sa.Table:
    """The runs table as 0001 created it, with ``check`` as its status constraint. SQLite cannot
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
    )


def _replace_check(old: str, new: str, old_name: str, new_name: str) -> None:
    if op.get_context().dialect.name == "sqlite":
        with op.batch_alter_table("tickwork_runs", copy_from=_runs(old), recreate="always") as batch:
            batch.drop_constraint(op.f(_NAME), type_="check")
            batch.create_check_constraint(op.f(_NAME), sa.text(new))
        return
    op.drop_constraint(op.f(old_name), "tickwork_runs", type_="check")
    op.create_check_constraint(op.f(new_name), "tickwork_runs", sa.text(new))


def upgrade() -> None:
    _replace_check(_OLD, _NEW, _OLD_NAME, _NAME)


def downgrade() -> None:
    # Rows of the new statuses would violate the old constraint: they end as abandoned.
    op.execute(
        sa.text(
            "UPDATE tickwork_runs SET status = 'abandoned', error = 'hand-off status removed by a downgrade' "
            "WHERE status IN ('submitted', 'started')"
        )
    )
    _replace_check(_NEW, _OLD, _NAME, _OLD_NAME)
