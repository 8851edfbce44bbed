"""The queue table. It belongs to this plugin, not to tickwork's Alembic migrations (see docs/plugins.md)."""

from __future__ import annotations

import enum

from sqlalchemy import JSON, BigInteger, CheckConstraint, Column, Index, Integer, MetaData, String, Table, Text, text

from tickwork.sql.schema import UTCDateTime


class JobState(enum.StrEnum):
    """Life of a queued job: ``queued`` → ``running`` → ``done`` or ``failed``."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def final(self) -> bool:
        return self in (JobState.DONE, JobState.FAILED)


#: States in which a job blocks a new job of the same schedule (the Docspell rule).
ACTIVE_STATES = (JobState.QUEUED.value, JobState.RUNNING.value)
_ACTIVE = text("state IN ('queued', 'running')")

#: Columns added after the table's first release, with what a worker assumes for rows that lack
#: them (enqueued by an older tickwork).
ADDED_COLUMNS = ("attempt", "node_id")
LEGACY_ATTEMPT = 1
LEGACY_NODE_ID = "unknown"

# A metadata of its own, so tickwork's migration drift check never sees this table.
metadata = MetaData()

jobs = Table(
    "tickwork_jobqueue",
    metadata,
    # SQLite only aliases rowid for INTEGER PRIMARY KEY, not BIGINT.
    Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True),
    Column("schedule", String(200), nullable=False),
    Column("run_id", BigInteger, nullable=False),
    Column("scheduled_for", UTCDateTime, nullable=False),
    # The enqueuing run's attempt and node, for the worker's run context (tickwork.current_run()).
    # Nullable: a table created before they existed gets them added empty (database.ensure_table).
    Column("attempt", Integer, nullable=True),
    Column("node_id", String(200), nullable=True),
    Column("target", Text, nullable=False),
    Column("arguments", JSON, nullable=False),
    Column("state", String(16), nullable=False),
    Column("enqueued_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime, nullable=True),
    # Refreshed by the worker while the job runs; a stale one means the worker died.
    Column("heartbeat_at", UTCDateTime, nullable=True),
    Column("finished_at", UTCDateTime, nullable=True),
    Column("worker", String(200), nullable=True),
    Column("error", Text, nullable=True),
    CheckConstraint("state IN ('queued', 'running', 'done', 'failed')", name="ck_tickwork_jobqueue_state"),
)

# Workers take the oldest queued job: this index serves that query and the stale-job sweep.
Index("ix_tickwork_jobqueue_state_id", jobs.c.state, jobs.c.id)
# At most one queued or running job per schedule, enforced by the database even when two
# submitters race (the check in the enqueue transaction alone is not enough under READ COMMITTED).
Index("uq_tickwork_jobqueue_active", jobs.c.schedule, unique=True, sqlite_where=_ACTIVE, postgresql_where=_ACTIVE)
