"""The declared schema (SQLAlchemy Core metadata). Alembic migrations must produce exactly this;
``tests/sql/test_migrations.py`` checks that they never drift apart."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.sql.ddl import DDLIfCallable
from sqlalchemy.sql.elements import ColumnElement, TextClause, conv
from sqlalchemy.types import TypeDecorator, TypeEngine

from .dialects import traits_of

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# Databases without a timezone-aware timestamp type keep microseconds since this instant.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes: ``timestamptz`` where the database has it, integer microseconds
    since the epoch where its store plugin declares ``epoch_micros`` (SQLite, MySQL)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if traits_of(dialect).epoch_micros:
            return dialect.type_descriptor(BigInteger())
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r} cannot be stored; use an aware UTC datetime")
        if traits_of(dialect).epoch_micros:
            return epoch_micros(value)
        return value.astimezone(UTC)

    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], datetime | None]:
        # Instead of process_result_value: TypeDecorator's wrapping around that, three times in
        # every claimed row, was half of a SQLite claim's row processing (a SELECT of a claim's
        # columns: 7.7 µs per row, 3.7 without the three conversions).
        if traits_of(dialect).epoch_micros:

            def from_micros(value: Any) -> datetime | None:
                return None if value is None else from_epoch_micros(int(value))

            return from_micros

        def to_utc(value: Any) -> datetime | None:
            return None if value is None else value.astimezone(UTC)

        return to_utc


def epoch_micros(value: datetime) -> int:
    """An aware time as stores without a timestamp type keep it: microseconds since the epoch."""
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@functools.lru_cache(maxsize=4096)
def from_epoch_micros(micros: int) -> datetime:
    """A stored epoch-microseconds value as an aware datetime (immutable, so shared): a claim's
    rows repeat their fire time and claim time, and converting each was 7 % of a SQLite node's
    engine thread in a burst."""
    return _EPOCH + timedelta(microseconds=micros)


def _migrated_check(sqltext: str, name: str) -> tuple[CheckConstraint, CheckConstraint]:
    """A check of ``tickwork_schedules`` named as the migrations left it on each database, so that
    a schema created from this metadata (``migrations.create_head``) is the migrated one: on
    PostgreSQL and MySQL migration 0001 gave the full name to ``op.create_table``, and the naming
    convention prefixed it once more; on SQLite, 0017 rebuilt the table with the plain name."""
    return (
        CheckConstraint(sqltext, name=name).ddl_if(dialect="sqlite"),
        CheckConstraint(sqltext, name=conv(f"ck_tickwork_schedules_ck_tickwork_schedules_{name}")).ddl_if(
            callable_=_not_sqlite
        ),
    )


def _only_on(applies: Callable[[str], bool]) -> DDLIfCallable:
    """A ``ddl_if`` test: the DDL is emitted where ``applies`` holds for the dialect's name."""

    def test(
        ddl: Any,
        target: Any,
        bind: Any,
        tables: Any = None,
        state: Any = None,
        *,
        dialect: Dialect,
        compiler: Any = None,
        checkfirst: bool = False,
    ) -> bool:
        # Called with or without ``checkfirst`` (not for a check rendered inside CREATE TABLE).
        return applies(dialect.name)

    return test


_not_sqlite = _only_on(lambda name: name != "sqlite")


# SQLite only aliases rowid for INTEGER PRIMARY KEY, not BIGINT.
Id = BigInteger().with_variant(Integer(), "sqlite")

schedules = Table(
    "tickwork_schedules",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    # The team's share of the cluster (docs/teams.md; migration 0015): a name is unique within it.
    Column("namespace", String(100), nullable=False, server_default="default"),
    Column("module", String(200), nullable=True),
    Column("bucket", Integer, nullable=False),
    Column("trigger_kind", String(32), nullable=False),
    Column("expression", Text, nullable=False),
    Column("timezone", String(64), nullable=False, server_default="UTC"),
    Column("executor", String(64), nullable=False),
    Column("target", Text, nullable=False),
    Column("arguments", JSON, nullable=False),
    # Double: MySQL's plain FLOAT is single precision; PostgreSQL and SQLite get exactly the
    # type plain Float gave them (double precision, REAL affinity).
    Column("timeout_s", Double(), nullable=False),
    Column("misfire", String(8), nullable=True),
    Column("retries", Integer, nullable=False, server_default="0"),
    Column("retry_backoff_s", Double(), nullable=False, server_default="10"),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("next_fire", UTCDateTime, nullable=True),
    Column("state", String(16), nullable=False, server_default="idle"),
    Column("claimed_by", String(200), nullable=True),
    Column("claimed_at", UTCDateTime, nullable=True),
    Column("claim_seq", BigInteger, nullable=False, server_default="0"),
    # A "run now" that arrived while a run was active; the end of that run honours it.
    Column("fire_requested_at", UTCDateTime, nullable=True),
    # Why the schedule is parked (next_fire NULL): handling one of its claims failed on a node.
    # Cleared when the definition changes or the schedule is enabled again.
    Column("fault", Text, nullable=True),
    #: The fault's :class:`~tickwork.structures.FaultKind` (migration 0011); NULL while not parked.
    Column("fault_kind", String(32), nullable=True),
    # A write (update, enable, disable, pause, resume, sync) chose the next fire while a claim
    # held the row: ``next_fire`` still names the held fire (the claim protocol's fence reads it),
    # and every release of the claim makes ``retimed_next`` the next fire (sql/rows.py).
    Column("retimed", Boolean, nullable=False, server_default=text("false")),
    Column("retimed_next", UTCDateTime, nullable=True),
    # The options that most schedules leave unset (pause_after_failures, jitter, start_at, end_at,
    # misfire_grace, max_catchup: sql/rows.py), as one JSON object, NULL when none is set: a
    # claim returns one more column, NULL for the schedules that use none of them.
    Column("options", JSON(none_as_null=True), nullable=True),
    # Consecutive failed fires, counted only for schedules with pause_after_failures.
    Column("failures", Integer, nullable=False, server_default="0"),
    # Fires that ran, counted only for schedules with max_runs.
    Column("run_count", Integer, nullable=False, server_default="0"),
    # Why a disabled schedule is paused, who paused it, when, and until when (NULL: until
    # resumed). An expired pause is resumed by a node's housekeeping (ix_..._paused_until).
    Column("paused_note", Text, nullable=True),
    Column("paused_by", String(200), nullable=True),
    Column("paused_at", UTCDateTime, nullable=True),
    Column("paused_until", UTCDateTime, nullable=True),
    # The number of the current definition (tickwork_schedule_versions; migration 0014), 0 for a
    # schedule not changed since before versions were recorded. A claim copies it into the run.
    Column("version", Integer, nullable=False, server_default="0"),
    # The version the last `tickwork apply` left it at (migration 0015), NULL: never applied. A
    # version past it is drift: changed since by something else (docs/schedules-in-git.md).
    Column("applied_version", Integer, nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    *_migrated_check("state IN ('idle', 'running')", "state"),
    *_migrated_check("misfire IS NULL OR misfire IN ('skip', 'once', 'all')", "misfire"),
    UniqueConstraint("namespace", "name", name="uq_tickwork_schedules_name"),
)

#: The predicate of the partial "due" index. Queries must repeat it verbatim (``claimable()``):
#: PostgreSQL cannot prove ``enabled IS TRUE`` implies ``enabled`` and SQLite matches index
#: predicates term by term, so any other spelling silently falls back to a full scan (seen: a
#: 310 ms sequential scan of 1M rows before this was fixed).
CLAIMABLE = "enabled AND state = 'idle'"

# "What is due now" reads this partial index in fire-time order, so its cost follows the number
# of due schedules, not the number stored.
Index(
    "ix_tickwork_schedules_due",
    schedules.c.next_fire,
    sqlite_where=text(CLAIMABLE),
    postgresql_where=text(CLAIMABLE),
)


# The fair claim (sql/claimturns.py) takes each namespace's due fires in turn: this index finds one
# namespace's earliest ones without passing over another's herd.
Index(
    "ix_tickwork_schedules_due_namespace",
    schedules.c.namespace,
    schedules.c.next_fire,
    sqlite_where=text(CLAIMABLE),
    postgresql_where=text(CLAIMABLE),
)


def named(name: str, namespace: str) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    """The WHERE terms of the schedule ``name`` of ``namespace`` (its key: names are unique only within one)."""
    return (schedules.c.namespace == namespace, schedules.c.name == name)


def claimable() -> TextClause:
    """The claimable-schedule condition, spelled exactly like the due index's predicate."""
    return text(CLAIMABLE)


Index(
    "ix_tickwork_schedules_claimed",
    schedules.c.claimed_by,
    schedules.c.claimed_at,
    sqlite_where=text("state = 'running'"),
    postgresql_where=text("state = 'running'"),
)
Index("ix_tickwork_schedules_module", schedules.c.module)
# The housekeeping's "which pauses expired" reads this, not the table: few rows have a value.
Index("ix_tickwork_schedules_paused_until", schedules.c.paused_until)

runs = Table(
    "tickwork_runs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column(
        "schedule_id",
        Id,
        ForeignKey("tickwork_schedules.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("scheduled_for", UTCDateTime, nullable=False),
    Column("attempt", Integer, nullable=False, server_default="1"),
    Column("claim_seq", BigInteger, nullable=True),
    Column("node", String(200), nullable=True),
    Column("started_at", UTCDateTime, nullable=True),
    Column("finished_at", UTCDateTime, nullable=True),
    Column("status", String(16), nullable=False),
    Column("error", Text, nullable=True),
    # The concurrency key a run was admitted under (sql/concurrency.py): its running rows are
    # what the key's limit counts. '' for a run admitted without a key, NULL for runs never
    # admitted (every run of a schedule without overlap allow or a key).
    Column("concurrency_key", String(200), nullable=True),
    # The queue worker that reported a hand-off started (Celery's ``celery@host``, ...): set only
    # by a worker's report (sql/handoffs.py), NULL for every run a node ran itself.
    Column("worker", String(200), nullable=True),
    # The schedule's version the run fired under (copied from the schedule row by the claim);
    # NULL for runs recorded before migration 0014.
    Column("version", Integer, nullable=True),
    # Invariant 1 of docs/claim-protocol.md, enforced by the database itself.
    UniqueConstraint("schedule_id", "scheduled_for", "attempt", name="uq_tickwork_runs_fire"),
    CheckConstraint(
        "status IN ('running', 'succeeded', 'failed', 'timed_out', 'skipped', 'abandoned', 'submitted', 'started', "
        "'cancelled')",
        name="status",
    ),
)
# The running runs of a node (its release when it dies, stops or starts again). Partial where the
# database has partial indexes; MySQL/MariaDB have none, and with ``node`` alone a release read the
# node's whole history: 1.7-3.5 s for 1.3 M rows, during which a starting node's first heartbeat
# waited on the lock its release held (a node start took 10-12.7 s; with ``status`` second, 2-3 s).
# The admission counts below are the same on MySQL.
Index(
    "ix_tickwork_runs_running",
    runs.c.node,
    runs.c.status,
    sqlite_where=text("status = 'running'"),
    postgresql_where=text("status = 'running'"),
)

# What the admission of a concurrent fire counts (docs/claim-protocol.md#concurrent-runs): the
# running runs of one schedule, and those of one concurrency key.
Index(
    "ix_tickwork_runs_active_schedule",
    runs.c.schedule_id,
    runs.c.status,
    sqlite_where=text("status = 'running'"),
    postgresql_where=text("status = 'running'"),
)
Index(
    "ix_tickwork_runs_active_key",
    runs.c.concurrency_key,
    runs.c.status,
    sqlite_where=text("status = 'running'"),
    postgresql_where=text("status = 'running'"),
)

#: The predicate of the partial index of open hand-offs. Queries must repeat it verbatim
#: (``open_handoff()``), as they do :data:`CLAIMABLE`.
OPEN_HANDOFF = "status IN ('submitted', 'started')"

# A hand-off's checks (is the schedule's previous hand-off still open; which have waited past
# the pickup timeout) read the runs a queue's worker has not finished: few rows, found without
# reading each schedule's history (with 2,000 runs per schedule they read 1 million rows per
# batch of 500 hand-offs: 0.4 s, growing with the history; migration 0018). PostgreSQL and SQLite
# only: MySQL has no partial index, and its (schedule_id, status) index above serves the first.
#: The databases with partial indexes, and the indexes that exist only on them (a migration and
#: a schema comparison skip these elsewhere).
PARTIAL_INDEX_DIALECTS = frozenset({"postgresql", "sqlite"})
PARTIAL_ONLY_INDEXES = frozenset({"ix_tickwork_runs_open_handoffs"})


Index(
    "ix_tickwork_runs_open_handoffs",
    runs.c.schedule_id,
    sqlite_where=text(OPEN_HANDOFF),
    postgresql_where=text(OPEN_HANDOFF),
).ddl_if(callable_=_only_on(PARTIAL_INDEX_DIALECTS.__contains__))


def open_handoff() -> TextClause:
    """The open hand-off condition, spelled exactly like its index's predicate."""
    return text(OPEN_HANDOFF)


# One row per concurrency key in use: the admission of a fire carrying the key locks it, so two
# nodes count the key's running runs one after the other, never both below the limit at once.
concurrency_keys = Table(
    "tickwork_concurrency_keys",
    metadata,
    Column("key", String(200), primary_key=True),
)

# Fire times queued by `tickwork jobs backfill`, each taken (and deleted) by a node owning the
# schedule's bucket, which runs it as a normal run with its own fire identity (docs/cluster.md#backfill).
backfills = Table(
    "tickwork_backfills",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column(
        "schedule_id",
        Id,
        ForeignKey("tickwork_schedules.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("scheduled_for", UTCDateTime, nullable=False),
    # Run it even if the history holds a run of that fire (a further attempt of it).
    Column("rerun", Boolean, nullable=False, server_default=text("false")),
    Column("created_at", UTCDateTime, nullable=False),
    # How this backfill's fires of the schedule run beside one another (BACKFILL_OVERLAP):
    # buffer_all (one at a time, oldest first) or allow (up to the schedule's max_concurrent).
    Column("overlap", String(20), nullable=False, server_default=text("'buffer_all'")),
    UniqueConstraint("schedule_id", "scheduled_for", name="uq_tickwork_backfills_fire"),
)

# The health state last announced per schedule (tickwork_health_changed; migration 0012), so that
# a change is announced once per cluster and not again after a restart. `version` is the fence:
# a node announces only when its conditional write moved it on (sql/healthrecords.py).
health_announcements = Table(
    "tickwork_health_announcements",
    metadata,
    Column(
        "schedule_id",
        Id,
        ForeignKey("tickwork_schedules.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("state", String(16), nullable=False),
    Column("alerting", Boolean, nullable=False),
    # When this state was first announced (a repeat keeps it), and when it was last announced.
    Column("since", UTCDateTime, nullable=False),
    Column("announced_at", UTCDateTime, nullable=False),
    Column("version", BigInteger, nullable=False, server_default="0"),
)

# Every definition a schedule had (docs/cli.md#versions): written in the transaction of the write
# that changed it (sql/versioning.py), deleted with the schedule. `changes` holds the changed
# fields (old and new), `definition` the whole definition after it (what a revert restores).
schedule_versions = Table(
    "tickwork_schedule_versions",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column(
        "schedule_id",
        Id,
        ForeignKey("tickwork_schedules.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("version", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("created_by", String(200), nullable=True),
    Column("changes", JSON, nullable=False),
    Column("definition", JSON, nullable=False),
    UniqueConstraint("schedule_id", "version", name="uq_tickwork_schedule_versions_version"),
)

# API tokens (docs/web.md#roles-and-tokens; sql/tokens.py): the SHA-256 digest of each secret,
# never the secret, looked up by its unique index; `namespaces` a JSON list, empty for all.
api_tokens = Table(
    "tickwork_api_tokens",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False),
    Column("role", String(16), nullable=False),
    Column("namespaces", JSON, nullable=False),
    Column("digest", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("created_by", String(200), nullable=True),
    UniqueConstraint("name", name="uq_tickwork_api_tokens_name"),
    UniqueConstraint("digest", name="uq_tickwork_api_tokens_digest"),
)

nodes = Table(
    "tickwork_nodes",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    # Random per process: a second live process with the same node id is refused at start.
    Column("instance", String(64), nullable=True),
    # The executor names the node has configured, as a JSON list, written when it registers and
    # when it joins again: what `jobs add` checks a schedule's executor against. NULL for a node
    # of a tickwork that did not publish them.
    Column("executors", Text, nullable=True),
)
