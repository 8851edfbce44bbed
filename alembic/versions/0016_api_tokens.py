"""API tokens (``tickwork_api_tokens``; docs/web.md#roles-and-tokens): each token's name, role,
namespaces (a JSON list, empty for all), the SHA-256 digest of its secret (never the secret),
when and by whom it was created. Created by ``tickwork tokens create``, checked by the dashboard.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from tickwork.sql.schema import UTCDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# As 0001 spells it (a migration keeps its own copy): SQLite aliases rowid only for INTEGER.
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # A new table only: no SQLite rebuild, so `tickwork db upgrade --sql` works. It starts empty:
    # until a token is created, the dashboard knows only its configured token, as before.
    op.create_table(
        "tickwork_api_tokens",
        sa.Column("id", _Id, nullable=False, autoincrement=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("namespaces", sa.JSON, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tickwork_api_tokens"),
        sa.UniqueConstraint("name", name="uq_tickwork_api_tokens_name"),
        sa.UniqueConstraint("digest", name="uq_tickwork_api_tokens_digest"),
    )


def downgrade() -> None:
    op.drop_table("tickwork_api_tokens")
