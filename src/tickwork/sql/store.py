"""The SQLAlchemy Core store shared by the SQLite and PostgreSQL plugins.

A dialect plugin subclasses :class:`SQLStore` and supplies the engine, the database clock
expression, change notification and the batched release; everything else is one code path.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, TypeVar, cast

from alembic.util.exc import CommandError
from sqlalchemy import (
    CTE,
    ColumnElement,
    Connection,
    Engine,
    Float,
    LargeBinary,
    Row,
    RowMapping,
    Select,
    Text,
    Update,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    true,
    tuple_,
    update,
)
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from ..abc import Store
from ..errors import (
    ConfigError,
    ScheduleExistsError,
    ScheduleNotFoundError,
    SchemaOutdatedError,
    StoreError,
)
from ..numbers import integer
from ..structures import (
    BUCKETS,
    FAILING,
    Claim,
    Finish,
    MisfirePolicy,
    NodeInfo,
    Outcome,
    RunRecord,
    RunStatus,
    Schedule,
    SchedulePlan,
    ScheduleSpec,
    ScheduleState,
)
from . import bulk, migrations
from .claims import CLAIMED_COLUMNS, STRATEGIES, ClaimRequest, ClaimStrategy
from .schema import UTCDateTime, claimable, nodes, runs, schedules

log = logging.getLogger("tickwork.store")

#: Longest error text kept in the history.
MAX_ERROR_CHARS = 4000
#: The SET clause that leaves a schedule held by no node, its next fire time unchanged.
UNHELD: dict[str, Any] = {"state": "idle", "claimed_by": None, "claimed_at": None, "retimed": False}


def spec_from_row(r: RowMapping) -> ScheduleSpec:
    """The spec of a schedule row (by key: a Row's attribute access costs 5x more, and this runs
    for every claimed row not seen before)."""
    return ScheduleSpec.stored(
        name=r["name"],
        trigger_kind=r["trigger_kind"],
        expression=r["expression"],
        timezone=r["timezone"],
        executor=r["executor"],
        target=r["target"],
        arguments=dict(r["arguments"] or {}),
        timeout=timedelta(seconds=r["timeout_s"]),
        module=r["module"],
        enabled=bool(r["enabled"]),
        misfire=MisfirePolicy(r["misfire"]) if r["misfire"] else None,
        retries=r["retries"],
        retry_backoff=timedelta(seconds=r["retry_backoff_s"]),
    )


def schedule_from_row(row: Row[Any]) -> Schedule:
    return Schedule(
        id=row.id,
        spec=spec_from_row(row._mapping),
        next_fire=row.next_fire,
        state=ScheduleState(row.state),
        claimed_by=row.claimed_by,
        claimed_at=row.claimed_at,
        claim_seq=row.claim_seq,
        created_at=row.created_at,
        updated_at=row.updated_at,
        fault=row.fault,
    )


def retriggered(spec: ScheduleSpec) -> ColumnElement[bool]:
    """The stored trigger (kind, expression, zone) differs from ``spec``'s."""
    return or_(
        schedules.c.trigger_kind != spec.trigger_kind,
        schedules.c.expression != spec.expression,
        schedules.c.timezone != spec.timezone,
    )


def spec_values(spec: ScheduleSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "module": spec.module,
        "bucket": spec.bucket,
        "trigger_kind": spec.trigger_kind,
        "expression": spec.expression,
        "timezone": spec.timezone,
        "executor": spec.executor,
        "target": spec.target,
        "arguments": spec.arguments,
        "timeout_s": spec.timeout.total_seconds(),
        "misfire": spec.misfire.value if spec.misfire else None,
        "retries": spec.retries,
        "retry_backoff_s": spec.retry_backoff.total_seconds(),
        "enabled": spec.enabled,
    }


#: The byte of an owned bucket in :func:`owned_mask`.
OWNED = b"\x01"


def owned_mask(buckets: Sequence[int]) -> bytes:
    """One byte per bucket, :data:`OWNED` where the node owns it (byte ``b`` for bucket ``b``)."""
    mask = bytearray(max(BUCKETS, max(buckets, default=-1) + 1))
    for bucket in buckets:
        mask[bucket] = OWNED[0]
    return bytes(mask)


def cap(text: str | None, limit: int = MAX_ERROR_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 20] + f"... [{len(text) - limit + 20} chars cut]"


#: SQLSTATEs of transient conflicts after which the transaction was rolled back and may be rerun.
_TRANSIENT_SQLSTATES = {"40P01", "40001"}  # deadlock detected, serialization failure
_ATTEMPTS = 3

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S")


def transient_retry(method: F) -> F:
    """Rerun a store operation after a deadlock, a serialization failure, or a connection the
    pool handed out stale (e.g. after a database restart; no pre-ping round trip is spent on
    every checkout). Anything else, and the third failure, propagates as :class:`StoreError`."""

    @functools.wraps(method)
    def wrapper(self: SQLStore, *args: Any, **kwargs: Any) -> Any:
        attempts = self.transient_attempts
        for attempt in range(1, attempts + 1):
            try:
                return method(self, *args, **kwargs)
            except StoreError as exc:
                cause = exc.__cause__
                transient = isinstance(cause, DBAPIError) and (cause.connection_invalidated or self.is_transient(cause))
                if attempt == attempts or not transient:
                    raise
                log.info("%s: retrying after a transient database error: %s", method.__name__, exc)
                # Jittered: two transactions that deadlocked must not meet again in lockstep.
                time.sleep(0.01 * attempt * random.uniform(0.5, 1.5))
        raise AssertionError("unreachable")

    return wrapper  # type: ignore[return-value]


class SQLStore(Store):
    """Store on SQLAlchemy 2 Core.

    :param claim: claim strategy name (default: the first of :attr:`claim_strategies`)
    :param batch_size: most schedules claimed per statement
    :param clock: replaces the database clock with a function returning aware UTC datetimes
        (e.g. :class:`tickwork.testing.FakeClock`), read at every statement's execution
    """

    #: The database's name in messages; also the SQLAlchemy dialect ``tickwork db upgrade --sql``
    #: renders the migrations for (``sqlite``, ``postgresql``, ``mysql``).
    database_label: ClassVar[str]
    #: Create the schema in a database that has none (never migrates an existing older one).
    create_empty: bool = False
    #: Runs of an operation before a transient error (:meth:`is_transient`) propagates.
    transient_attempts: ClassVar[int] = _ATTEMPTS

    def __init__(
        self,
        *,
        claim: str | None = None,
        batch_size: int = 100,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        strategy_name = claim or self.claim_strategies[0]
        if strategy_name not in self.claim_strategies:
            raise ConfigError(
                f"claim strategy {strategy_name!r} is not supported by the {self.database_label} store; "
                f"it supports: {', '.join(self.claim_strategies)}"
            )
        integer("batch_size", batch_size, low=1, high=100_000)
        self.strategy: ClaimStrategy = STRATEGIES[strategy_name]()
        self.batch_size = batch_size
        self.clock = clock
        self._engine: Engine | None = None
        #: Statements executed by this store (for benchmarks' statements-per-fire).
        self.statements = 0
        self._specs: dict[tuple[int, datetime], ScheduleSpec] = {}
        self._built: dict[str, Any] = {}

    # -- dialect hooks ----------------------------------------------------------------------------

    @abstractmethod
    def _create_engine(self) -> Engine:
        """Create the engine (connect lazily; errors surface in :meth:`open`)."""

    @abstractmethod
    def _db_now(self) -> ColumnElement[Any]:
        """SQL expression of the database clock, typed :class:`UTCDateTime`."""

    @abstractmethod
    def _plus_seconds(self, value: ColumnElement[Any], seconds: ColumnElement[Any]) -> ColumnElement[Any]:
        """SQL for ``value + seconds`` on a UTCDateTime column."""

    @abstractmethod
    def _notify(self, conn: Connection) -> None:
        """Tell listening nodes that schedules changed (within the current transaction)."""

    @abstractmethod
    def _release_and_end(self, conn: Connection, finishes: Sequence[Finish]) -> set[int]:
        """Fenced release of each finish's schedule (``release_values``, only while it still
        carries the claim's ``claim_seq`` and is running) and, where it landed, the end of its run
        (status, capped error, ``finished_at`` by the database clock).

        :return: the schedule ids whose release landed
        """

    @abstractmethod
    def refresh_statistics(self) -> None:
        """Refresh the planner statistics of the schedules table (after a bulk change: tools and
        benchmarks that write rows directly)."""

    def announce_changes(self) -> None:
        """Tell listening nodes that schedules changed (after rows were written directly)."""
        with self._tx() as conn:
            self._notify(conn)

    def is_transient(self, error: DBAPIError) -> bool:
        """Whether ``error`` rolled the transaction back in a way worth rerunning it (a deadlock,
        a serialization failure). Default: the SQLSTATE the driver reports."""
        return getattr(error.orig, "sqlstate", None) in _TRANSIENT_SQLSTATES

    def _release_and_end_by_fences(
        self, conn: Connection, finishes: Sequence[Finish], *, lock: bool = False
    ) -> set[int]:
        """:meth:`_release_and_end` for a database without UPDATE ... RETURNING or whose
        transaction already holds the write lock: read the fences in one SELECT (``lock``: FOR
        UPDATE, so they cannot change before the UPDATEs), then release the rows that still carry
        ours and end their runs with one executemany of one cached statement each."""
        ids = [f.claim.schedule_id for f in finishes]
        key = f"fences/{lock}"
        current = {
            row.id: row.claim_seq
            for row in conn.execute(self._statement(key, lambda: self._fences(lock)), {"ids": ids})
            if row.state == "running"
        }
        mine = [f for f in finishes if current.get(f.claim.schedule_id) == f.claim.claim_seq]
        self.statements += 1
        if mine:
            releases = [{"b_id": f.claim.schedule_id, "b_seq": f.claim.claim_seq, "b_next": f.next_fire} for f in mine]
            conn.execute(self._statement("release_many", self._release_many), releases)
            self.statements += 1
        ends = [
            {
                "b_id": f.claim.run_id,
                "b_status": f.outcome.status.value,
                "b_error": cap(f.outcome.error),
                "b_started": f.started_at,
            }
            for f in mine
            if f.claim.run_id is not None
        ]
        if ends:
            conn.execute(self._statement("end_runs_many", self._end_many), ends)
            self.statements += 1
        return {f.claim.schedule_id for f in mine}

    @staticmethod
    def _fences(lock: bool) -> Select[Any]:
        query = select(schedules.c.id, schedules.c.claim_seq, schedules.c.state).where(
            schedules.c.id.in_(bindparam("ids", expanding=True))
        )
        return query.with_for_update() if lock else query

    def _release_many(self) -> Update:
        return (
            update(schedules)
            .where(
                schedules.c.id == bindparam("b_id"),
                schedules.c.claim_seq == bindparam("b_seq"),
                schedules.c.state == "running",
            )
            .values(**self.release_values(bindparam("b_next", type_=UTCDateTime)))
        )

    def _end_many(self) -> Update:
        return (
            update(runs)
            .where(runs.c.id == bindparam("b_id"))
            .values(
                status=bindparam("b_status"),
                error=bindparam("b_error"),
                finished_at=self.now_expr(),
                started_at=func.coalesce(bindparam("b_started", type_=UTCDateTime), runs.c.started_at),
            )
        )

    def _owned(self, buckets: Sequence[int] | None) -> ColumnElement[bool] | None:
        """The ownership filter of the due query: the row's byte in a mask of the owned buckets.

        One bound value whatever the ring looks like, and a constant-time test per row: an
        ``IN`` list (or ``= ANY(array)``) of the ~500 buckets a node owns is scanned for every
        candidate row, which made ``hashring`` slower than ``all``. ``substr`` of a binary
        string is the same function on SQLite, PostgreSQL and MySQL."""
        if buckets is None:
            return None
        mask = bindparam("owned_buckets", owned_mask(buckets), type_=LargeBinary)
        return func.substr(mask, schedules.c.bucket + 1, 1) == literal(OWNED, LargeBinary)

    def release_values(self, next_fire: ColumnElement[Any] | Any) -> dict[str, Any]:
        """The SET clause of a fenced release; a pending "run now" makes the schedule due at once,
        and a trigger changed during the run keeps the next fire :meth:`update` set."""
        return {
            **UNHELD,
            "fire_requested_at": None,
            # A trigger changed meanwhile (sync, update) set the next fire: the run's, computed
            # from the old trigger, does not overwrite it.
            "next_fire": case(
                (schedules.c.fire_requested_at.is_not(None), self.now_expr()),
                (schedules.c.retimed, schedules.c.next_fire),
                else_=next_fire,
            ),
        }

    # -- helpers ----------------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise StoreError("store is not open; call open() first")
        return self._engine

    def _statement(self, key: str, build: Callable[[], S]) -> S:
        """The statement ``build()`` returns, built once per store: constructing a statement
        costs more Python than executing its cached compiled form (hot paths only)."""
        stmt = self._built.get(key)
        if stmt is None:
            stmt = self._built[key] = build()
        return stmt

    def now_expr(self) -> ColumnElement[Any]:
        """The clock every statement reads: the database's, or a ``clock`` given to the store,
        bound as a parameter whose value is read at each execution — so a statement built once
        and cached runs under a test clock exactly as it does in production."""
        if self.clock is not None:
            return bindparam("tickwork_now", callable_=self.clock, type_=UTCDateTime)
        return self._db_now()

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
        except IntegrityError:
            raise
        except (OperationalError, DBAPIError) as exc:
            raise StoreError(f"{self.database_label} store: {exc.orig or exc}") from exc

    # -- lifecycle --------------------------------------------------------------------------------

    def open(self, *, check_schema: bool = True) -> None:
        if self._engine is None:
            self._engine = self._create_engine()
        try:
            with self.engine.connect() as conn:
                current = migrations.current_revision(conn)
        except (OperationalError, DBAPIError) as exc:
            raise StoreError(f"cannot open {self.describe()}: {exc.orig or exc}") from exc
        if current is None and self.create_empty:
            log.info("creating the tickwork schema in the empty %s", self.describe())
            self.upgrade()
            current = migrations.head_revision()
        if check_schema:
            head = migrations.head_revision()
            if current != head:
                raise SchemaOutdatedError(
                    f"the schema of {self.describe()} is at revision {current or 'none (empty database)'}, "
                    f"this tickwork needs {head}; run `tickwork db upgrade` to migrate it"
                )

    def describe(self) -> str:
        return f"{self.database_label} database"

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def upgrade(self) -> None:
        if self._engine is None:
            self._engine = self._create_engine()
        try:
            with self.engine.begin() as conn:
                migrations.upgrade(conn)
        except (OperationalError, DBAPIError) as exc:
            raise StoreError(f"cannot migrate {self.describe()}: {exc.orig or exc}") from exc
        except CommandError as exc:  # e.g. stamped with a revision this tickwork does not know
            raise StoreError(f"cannot migrate {self.describe()}: {exc}") from exc

    def schema_revisions(self) -> tuple[str | None, str]:
        if self._engine is None:
            self._engine = self._create_engine()
        try:
            with self.engine.connect() as conn:
                current = migrations.current_revision(conn)
        except (OperationalError, DBAPIError) as exc:
            raise StoreError(f"cannot open {self.describe()}: {exc.orig or exc}") from exc
        return current, migrations.head_revision()

    def upgrade_sql(self) -> str:
        # A database that does not exist yet gets the whole schema, and is not created by asking.
        current = self.schema_revisions()[0] if self.database_exists() else None
        try:
            return migrations.upgrade_sql(self.database_label, current)
        except CommandError as exc:
            raise StoreError(f"cannot migrate {self.describe()}: {exc}") from exc

    @transient_retry
    def now(self) -> datetime:
        with self._tx() as conn:
            value = conn.execute(select(self.now_expr())).scalar_one()
        assert isinstance(value, datetime)
        return value

    # -- schedules --------------------------------------------------------------------------------

    def add(self, spec: ScheduleSpec, next_fire: datetime | None) -> Schedule:
        now = self.now_expr()
        values = spec_values(spec) | {"next_fire": next_fire, "created_at": now, "updated_at": now}
        try:
            with self._tx() as conn:
                row = conn.execute(insert(schedules).values(**values).returning(*schedules.c)).one()
                self._notify(conn)
        except IntegrityError as exc:
            raise ScheduleExistsError(spec.name) from exc
        return schedule_from_row(row)

    def update(self, spec: ScheduleSpec, next_fire: datetime | None) -> Schedule:
        # A new definition is a fix: a parked schedule fires again. A new trigger while a run is
        # active marks the row retimed, so that the run's release keeps this next fire.
        values = spec_values(spec) | {
            "next_fire": next_fire,
            "updated_at": self.now_expr(),
            "fault": None,
            "retimed": case(
                (and_(schedules.c.state == "running", retriggered(spec)), true()), else_=schedules.c.retimed
            ),
        }
        with self._tx() as conn:
            row = conn.execute(
                update(schedules).where(schedules.c.name == spec.name).values(**values).returning(*schedules.c)
            ).first()
            if row is None:
                raise ScheduleNotFoundError(spec.name)
            self._notify(conn)
        return schedule_from_row(row)

    @transient_retry
    def write_schedules(
        self,
        plan: Callable[[Sequence[Schedule]], SchedulePlan],
        next_fire: Callable[[ScheduleSpec, datetime], datetime | None],
    ) -> SchedulePlan:
        # One transaction: the plan is made from rows that cannot change before it is written
        # (the dialect's lock serializes two nodes starting at once), and a refused plan writes
        # nothing.
        try:
            with self._tx() as conn:
                self.lock_schedule_writes(conn)
                stored = [schedule_from_row(r) for r in conn.execute(select(schedules).order_by(schedules.c.name))]
                applied = plan(stored)
                triggers = {s.name: (s.spec.trigger_kind, s.spec.expression, s.spec.timezone) for s in stored}
                bulk.mark_retimed(
                    conn,
                    [
                        spec
                        for spec in (*applied.update, *applied.retrigger)
                        if triggers.get(spec.name) != (spec.trigger_kind, spec.expression, spec.timezone)
                    ],
                )
                bulk.insert_schedules(self, conn, applied.create, next_fire, spec_values)
                bulk.update_schedules(self, conn, applied.update, None, spec_values)
                bulk.update_schedules(self, conn, applied.retrigger, next_fire, spec_values)
                bulk.delete_schedules(conn, applied.remove)
                if applied.create or applied.update or applied.retrigger or applied.remove:
                    self._notify(conn)
        except IntegrityError as exc:
            raise ScheduleExistsError(str(exc.orig)) from exc
        return applied

    def lock_schedule_writes(self, conn: Connection) -> None:
        """Take a transaction-scoped lock that serializes :meth:`write_schedules` across nodes.
        The default takes none: the batched insert skips names another writer created and
        refuses those of another module, so the outcome is right, only possibly done twice.
        SQLite's ``BEGIN IMMEDIATE`` already serializes writers."""

    @transient_retry
    def get(self, name: str) -> Schedule:
        with self._tx() as conn:
            row = conn.execute(select(schedules).where(schedules.c.name == name)).first()
        if row is None:
            raise ScheduleNotFoundError(name)
        return schedule_from_row(row)

    @transient_retry
    def list_schedules(self, *, module: str | None = None) -> list[Schedule]:
        query = select(schedules).order_by(schedules.c.name)
        if module is not None:
            query = query.where(schedules.c.module == module)
        with self._tx() as conn:
            return [schedule_from_row(row) for row in conn.execute(query)]

    def schedule_counts(self) -> dict[str, int]:
        """How many schedules are ``idle``, ``running`` and ``disabled`` (one grouped query; the
        metrics plugin's ``tickwork_schedules{state}``)."""
        state = case((schedules.c.enabled.is_(False), literal("disabled")), else_=schedules.c.state)
        counts = {"idle": 0, "running": 0, "disabled": 0}
        with self._tx() as conn:
            for name, count in conn.execute(select(state, func.count()).group_by(state)):
                counts[str(name)] = int(count)
        return counts

    def remove(self, name: str) -> None:
        with self._tx() as conn:
            schedule_id = conn.scalar(select(schedules.c.id).where(schedules.c.name == name))
            if schedule_id is None:
                raise ScheduleNotFoundError(name)
            # Explicit, so SQLite does not depend on PRAGMA foreign_keys for the cascade.
            conn.execute(delete(runs).where(runs.c.schedule_id == schedule_id))
            conn.execute(delete(schedules).where(schedules.c.id == schedule_id))
            self._notify(conn)

    def set_enabled(self, name: str, enabled: bool, next_fire: datetime | None) -> Schedule:
        with self._tx() as conn:
            row = conn.execute(
                update(schedules)
                .where(schedules.c.name == name)
                .values(enabled=enabled, next_fire=next_fire, updated_at=self.now_expr(), fault=None)
                .returning(*schedules.c)
            ).first()
            if row is None:
                raise ScheduleNotFoundError(name)
            self._notify(conn)
        return schedule_from_row(row)

    def fire_now(self, name: str) -> Schedule:
        now = self.now_expr()
        with self._tx() as conn:
            row = conn.execute(
                update(schedules)
                .where(schedules.c.name == name, schedules.c.state == "idle")
                .values(next_fire=now, updated_at=now)
                .returning(*schedules.c)
            ).first()
            if row is None:
                # Running: the end of the current run would overwrite next_fire, so leave a
                # request that the release honours (fires right after the current run).
                row = conn.execute(
                    update(schedules)
                    .where(schedules.c.name == name)
                    .values(fire_requested_at=now, updated_at=now)
                    .returning(*schedules.c)
                ).first()
            if row is None:
                raise ScheduleNotFoundError(name)
            self._notify(conn)
        return schedule_from_row(row)

    # -- claiming ---------------------------------------------------------------------------------

    def claim_due(self, node_id: str, *, limit: int, buckets: Sequence[int] | None, ahead: float = 0.0) -> list[Claim]:
        limit = max(1, min(limit, self.batch_size))
        if self.strategy.one_per_transaction:
            claims: list[Claim] = []
            for _ in range(limit):
                got = self._claim_once(node_id, 1, buckets, ahead)
                if not got:
                    break
                claims.extend(got)
            return claims
        return self._claim_once(node_id, limit, buckets, ahead)

    @transient_retry
    def _claim_once(self, node_id: str, limit: int, buckets: Sequence[int] | None, ahead: float) -> list[Claim]:
        with self._tx() as conn:
            now = self.now_expr()
            due_by = None
            if ahead > 0:
                due_by = self._plus_seconds(now, bindparam("claim_ahead", ahead, type_=Float))
            req = ClaimRequest(node_id, limit, self._owned(buckets), now, due_by, sql=self)
            strategy = self.strategy
            if not strategy.single_update:
                won = strategy.claim(conn, req)
                self.statements += 2
                if not won:
                    return []
                return self._record_runs(
                    conn, node_id, [c.row._mapping for c in won], {c.row.id: c.run_id for c in won if c.run_id}
                )
            if strategy.reads_first:
                take = strategy.take(conn, req)
                if take is None:
                    return []
                stmt = self._claim_statement(take)
            else:
                # The statement depends only on the request's named parameters: build it once.
                key = f"claim/{buckets is None}/{ahead > 0}"
                stmt = self._statement(key, lambda: self._claim_statement(cast(Update, strategy.take(conn, req))))
            params: dict[str, Any] = {"claim_node": node_id, "claim_limit": limit}
            if buckets is not None:
                params["owned_buckets"] = owned_mask(buckets)
            if ahead > 0:
                params["claim_ahead"] = ahead
            rows = conn.execute(stmt, params).mappings().all()
            self.statements += 1
            if self.claim_records_runs:
                return self._claims(rows, {r["id"]: r["run_id"] for r in rows if r["run_id"] is not None})
            return self._record_runs(conn, node_id, rows, {}) if rows else []

    #: Whether :meth:`_claim_statement` also inserts the run rows (each row carries ``run_id``).
    claim_records_runs: ClassVar[bool] = False

    def _claim_statement(self, take: Update) -> Any:
        """The statement that executes a strategy's ``take``, returning :data:`CLAIMED_COLUMNS`.
        A dialect that can also insert the running run rows in it (data-modifying CTEs) does so,
        returning each row's ``run_id`` (NULL: already recorded), and sets
        :attr:`claim_records_runs`."""
        return take.returning(*CLAIMED_COLUMNS)

    def _record_runs(
        self, conn: Connection, node_id: str, rows: Sequence[RowMapping], run_ids: dict[int, int]
    ) -> list[Claim]:
        """Insert the running run rows of claimed ``rows`` that have none in ``run_ids`` yet."""
        need = [r for r in rows if r["id"] not in run_ids]
        if need:
            params = [
                {
                    "schedule_id": r["id"],
                    "scheduled_for": r["next_fire"],
                    "attempt": 1,
                    "claim_seq": r["claim_seq"],
                    "node": node_id,
                    # A fire claimed ahead of its time has not started yet.
                    "started_at": None if r["next_fire"] > r["claimed_at"] else r["claimed_at"],
                    "status": "running",
                }
                for r in need
            ]
            run_ids = run_ids | self._insert_runs(conn, params)
            self.statements += 1
        return self._claims(rows, run_ids)

    def _claims(self, rows: Sequence[RowMapping], run_ids: dict[int, int]) -> list[Claim]:
        claims = []
        for r in rows:
            claims.append(
                Claim(
                    schedule_id=r["id"],
                    spec=self._spec(r),
                    scheduled_for=r["next_fire"],
                    claim_seq=r["claim_seq"],
                    claimed_at=r["claimed_at"],
                    run_id=run_ids.get(r["id"]),
                )
            )
        claims.sort(key=lambda c: (c.scheduled_for, c.schedule_id))
        return claims

    def _spec(self, r: RowMapping) -> ScheduleSpec:
        """The row's spec, cached by (id, updated_at): a definition only changes with updated_at,
        and building a spec per fire was a measurable share of a node's CPU."""
        key = (r["id"], r["updated_at"])
        spec = self._specs.get(key)
        if spec is None:
            if len(self._specs) > 100_000:
                self._specs.clear()
            spec = self._specs[key] = spec_from_row(r)
        return spec

    def _insert_runs(self, conn: Connection, params: list[dict[str, Any]]) -> dict[int, int]:
        """Insert running run rows, skipping (schedule, fire, attempt) already recorded; return
        ``{schedule_id: run_id}`` of those inserted. executemany: one cached statement that
        SQLAlchemy batches into multi-row INSERTs."""
        result = conn.execute(self.insert_ignore(runs).returning(runs.c.id, runs.c.schedule_id), params)
        return {r.schedule_id: r.id for r in result}

    @abstractmethod
    def insert_ignore(self, table: Any) -> Any:
        """An INSERT that skips rows violating a unique constraint (``ON CONFLICT DO NOTHING``).
        Part of :class:`~tickwork.sql.claims.ClaimSQL`: claim strategies ask the store for it."""

    def materialized(self, cte: CTE) -> CTE:
        """``cte`` evaluated once, before the statement that uses it (PostgreSQL needs the
        ``MATERIALIZED`` keyword for that; most databases do it anyway)."""
        return cte

    def try_lock_row(self, row_id: ColumnElement[Any]) -> ColumnElement[bool]:
        """A transaction-scoped try-lock on ``row_id`` (the ``advisory`` strategy); only stores
        that list that strategy provide one."""
        raise NotImplementedError(f"the {self.database_label} store has no transaction-scoped row try-lock")

    @transient_retry
    def finish(self, node_id: str, finishes: Sequence[Finish]) -> list[bool]:
        if not finishes:
            return []
        with self._tx() as conn:
            landed = self._release_and_end(conn, finishes)
            now = self.now_expr()
            late_runs = [
                {
                    "b_id": f.claim.run_id,
                    "b_status": f.outcome.status.value,
                    "b_error": cap(
                        f"finished ({f.outcome.status.value}) after its claim was taken over"
                        + (f": {f.outcome.error}" if f.outcome.error else "")
                    ),
                }
                for f in finishes
                if f.claim.run_id is not None and f.claim.schedule_id not in landed
            ]
            if late_runs:
                # A fenced-out finisher keeps the status the reaper gave its run, if any.
                conn.execute(
                    update(runs)
                    .where(runs.c.id == bindparam("b_id"), runs.c.status == "running")
                    .values(status=bindparam("b_status"), finished_at=now),
                    late_runs,
                )
                # Appended: the reason the reaper or a dead-node release wrote stays readable.
                conn.execute(
                    update(runs)
                    .where(runs.c.id == bindparam("b_id"))
                    .values(
                        error=func.coalesce(runs.c.error + literal("\n", Text), literal("", Text))
                        + bindparam("b_error", type_=Text)
                    ),
                    late_runs,
                )
                for f in finishes:
                    if f.claim.run_id is not None and f.claim.schedule_id not in landed:
                        log.warning(
                            "run %s of %s finished after its claim was taken over; its end changes nothing",
                            f.claim.run_id,
                            f.claim.spec.name,
                        )
            skipped = [
                {
                    "schedule_id": f.claim.schedule_id,
                    "scheduled_for": t,
                    "attempt": 1,
                    "claim_seq": f.claim.claim_seq,
                    "node": node_id,
                    "status": RunStatus.SKIPPED.value,
                    "finished_at": f.finished_at or f.claim.claimed_at,
                    "error": reason,
                }
                for f in finishes
                if f.claim.schedule_id in landed
                for t, reason in f.skipped
            ]
            if skipped:
                conn.execute(self.insert_ignore(runs), skipped)
                self.statements += 1
        return [f.claim.schedule_id in landed for f in finishes]

    @transient_retry
    def end_attempt(self, claim: Claim, outcome: Outcome, started_at: datetime | None = None) -> None:
        values: dict[str, Any] = {
            "status": outcome.status.value,
            "error": cap(outcome.error),
            "finished_at": self.now_expr(),
        }
        if started_at is not None:
            values["started_at"] = started_at
        with self._tx() as conn:
            conn.execute(update(runs).where(runs.c.id == claim.run_id, runs.c.status == "running").values(**values))

    @transient_retry
    def unclaim(self, node_id: str, claims: Sequence[Claim]) -> int:
        if not claims:
            return 0
        fences = [(c.schedule_id, c.claim_seq) for c in claims]
        with self._tx() as conn:
            released = {
                row.id
                for row in conn.execute(
                    update(schedules)
                    .where(tuple_(schedules.c.id, schedules.c.claim_seq).in_(fences), schedules.c.state == "running")
                    .values(**UNHELD)
                    .returning(schedules.c.id)
                )
            }
            run_ids = [c.run_id for c in claims if c.schedule_id in released and c.run_id is not None]
            if run_ids:
                conn.execute(delete(runs).where(runs.c.id.in_(run_ids), runs.c.status == "running"))
            if released:
                self._notify(conn)
        return len(released)

    def start_attempt(self, node_id: str, claim: Claim) -> int | None:
        fenced = select(
            schedules.c.id,
            literal(claim.scheduled_for, UTCDateTime),
            literal(claim.attempt),
            schedules.c.claim_seq,
            literal(node_id),
            self.now_expr(),
            literal("running"),
        ).where(
            schedules.c.id == claim.schedule_id,
            schedules.c.claim_seq == claim.claim_seq,
            schedules.c.state == "running",
        )
        with self._tx() as conn:
            conn.execute(
                update(schedules)
                .where(schedules.c.id == claim.schedule_id, schedules.c.claim_seq == claim.claim_seq)
                .values(claimed_at=self.now_expr())
            )
            run_id = conn.execute(
                self.insert_ignore(runs)
                .from_select(
                    ["schedule_id", "scheduled_for", "attempt", "claim_seq", "node", "started_at", "status"], fenced
                )
                .returning(runs.c.id)
            ).scalar()
            if run_id is None:
                # Opened before under this very claim (the answer was lost): the same attempt.
                run_id = conn.execute(
                    select(runs.c.id).where(
                        runs.c.schedule_id == claim.schedule_id,
                        runs.c.scheduled_for == claim.scheduled_for,
                        runs.c.attempt == claim.attempt,
                        runs.c.claim_seq == claim.claim_seq,
                        runs.c.node == node_id,
                        runs.c.status == "running",
                        fenced.exists(),
                    )
                ).scalar()
        return None if run_id is None else int(run_id)

    @transient_retry
    def next_due(self, *, buckets: Sequence[int] | None) -> datetime | None:
        query = select(func.min(schedules.c.next_fire)).where(claimable())
        owned = self._owned(buckets)
        if owned is not None:
            query = query.where(owned)
        with self._tx() as conn:
            value = conn.execute(query).scalar()
        return value if isinstance(value, datetime) else None

    @transient_retry
    def renew(self, node_id: str, claims: Sequence[Claim]) -> None:
        if not claims:
            return
        with self._tx() as conn:
            conn.execute(
                update(schedules)
                .where(
                    schedules.c.id.in_([c.schedule_id for c in claims]),
                    schedules.c.claimed_by == node_id,
                    schedules.c.state == "running",
                )
                .values(claimed_at=self.now_expr())
            )

    def _abandon_claims_of(self, conn: Connection, node_id: str, reason: str, now: Any) -> int:
        """Record the node's running runs ``abandoned`` and release its schedules; the count released."""
        conn.execute(
            update(runs)
            .where(runs.c.node == node_id, runs.c.status == "running")
            .values(status=RunStatus.ABANDONED.value, finished_at=now, error=reason)
        )
        released = conn.execute(
            update(schedules).where(schedules.c.claimed_by == node_id, schedules.c.state == "running").values(**UNHELD)
        ).rowcount
        if released:
            self._notify(conn)
        return int(released or 0)

    @transient_retry
    def release_node(self, node_id: str, reason: str) -> int:
        now = self.now_expr()
        with self._tx() as conn:
            return self._abandon_claims_of(conn, node_id, reason, now)

    @transient_retry
    def park(self, node_id: str, parks: Sequence[tuple[Finish, str]]) -> list[bool]:
        if not parks:
            return []
        now = self.now_expr()
        with self._tx() as conn:
            landed: list[bool] = []
            for finish, fault in parks:
                claim = finish.claim
                parked = conn.execute(
                    update(schedules)
                    .where(
                        schedules.c.id == claim.schedule_id,
                        schedules.c.claim_seq == claim.claim_seq,
                        schedules.c.state == "running",
                    )
                    .values(**UNHELD, next_fire=None, fire_requested_at=None, fault=cap(fault, 1000))
                ).rowcount
                landed.append(bool(parked))
                if claim.run_id is not None and parked:
                    values: dict[str, Any] = {
                        "status": finish.outcome.status.value,
                        "error": cap(finish.outcome.error),
                        "finished_at": now,
                    }
                    if finish.started_at is not None:
                        values["started_at"] = finish.started_at
                    conn.execute(update(runs).where(runs.c.id == claim.run_id).values(**values))
            if any(landed):
                self._notify(conn)
        return landed

    @transient_retry
    def release_untracked(self, node_id: str, tracked: Sequence[Claim], reason: str) -> int:
        keep = {(c.schedule_id, c.claim_seq) for c in tracked}
        with self._tx() as conn:
            # Locked where the database can (PostgreSQL, MySQL; SQLite writes one at a time), so
            # what is read is what is released. No RETURNING: MySQL has none.
            held = conn.execute(
                select(schedules.c.id, schedules.c.claim_seq)
                .where(schedules.c.claimed_by == node_id, schedules.c.state == "running")
                .with_for_update()
            ).all()
            stranded = [(r.id, r.claim_seq) for r in held if (r.id, r.claim_seq) not in keep]
            if not stranded:
                return 0
            conn.execute(
                update(schedules)
                .where(
                    tuple_(schedules.c.id, schedules.c.claim_seq).in_(stranded),
                    schedules.c.claimed_by == node_id,
                    schedules.c.state == "running",
                )
                .values(**UNHELD)
            )
            conn.execute(
                update(runs)
                .where(
                    tuple_(runs.c.schedule_id, runs.c.claim_seq).in_(stranded),
                    runs.c.node == node_id,
                    runs.c.status == "running",
                )
                .values(status=RunStatus.ABANDONED.value, finished_at=self.now_expr(), error=reason)
            )
            self._notify(conn)
        return len(stranded)

    @transient_retry
    def reap_expired(self, grace_seconds: float) -> int:
        now = self.now_expr()
        deadline = self._plus_seconds(schedules.c.claimed_at, schedules.c.timeout_s + literal(grace_seconds))
        with self._tx() as conn:
            rows = conn.execute(
                update(schedules)
                .where(schedules.c.state == "running", deadline < now)
                .values(**UNHELD)
                .returning(schedules.c.id, schedules.c.claim_seq, schedules.c.name)
            ).all()
            for row in rows:
                conn.execute(
                    update(runs)
                    .where(
                        runs.c.schedule_id == row.id,
                        runs.c.claim_seq == row.claim_seq,
                        runs.c.status == "running",
                    )
                    .values(
                        status=RunStatus.TIMED_OUT.value,
                        finished_at=now,
                        error=f"hard timeout: claim not ended within timeout + {grace_seconds:g}s grace",
                    )
                )
                log.warning("hard timeout: released %s (claim %s)", row.name, row.claim_seq)
            if rows:
                self._notify(conn)
        return len(rows)

    # -- nodes ------------------------------------------------------------------------------------

    @transient_retry
    def heartbeat(self, node_id: str) -> datetime:
        now = self.now_expr()
        with self._tx() as conn:
            value = conn.execute(
                update(nodes).where(nodes.c.id == node_id).values(heartbeat_at=now).returning(nodes.c.heartbeat_at)
            ).scalar()
            if value is None:
                value = conn.execute(
                    self.insert_ignore(nodes)
                    .values(id=node_id, started_at=now, heartbeat_at=now)
                    .returning(nodes.c.heartbeat_at)
                ).scalar()
            if value is None:  # inserted concurrently by a namesake; refresh instead
                value = conn.execute(
                    update(nodes).where(nodes.c.id == node_id).values(heartbeat_at=now).returning(nodes.c.heartbeat_at)
                ).scalar_one()
        assert isinstance(value, datetime)
        return value

    @transient_retry
    def register_node(self, node_id: str, instance: str, live_within: float) -> NodeInfo | None:
        now = self.now_expr()
        fresh = nodes.c.heartbeat_at > self._plus_seconds(now, literal(-live_within))
        with self._tx() as conn:
            live = conn.execute(
                select(nodes).where(nodes.c.id == node_id, fresh, nodes.c.instance.is_distinct_from(instance))
            ).first()
            if live is not None:
                return NodeInfo(id=live.id, started_at=live.started_at, heartbeat_at=live.heartbeat_at)
            conn.execute(delete(nodes).where(nodes.c.id == node_id))
            conn.execute(insert(nodes).values(id=node_id, started_at=now, heartbeat_at=now, instance=instance))
        return None

    @transient_retry
    def release_dead_node(self, node_id: str, stale_after: float, reason: str) -> int | None:
        now = self.now_expr()
        with self._tx() as conn:
            # The judgement and the release in one transaction: a node that beats in between
            # either beat first (then this deletes nothing) or waits for this to commit.
            dead = conn.execute(
                select(nodes.c.id)
                .where(nodes.c.id == node_id, nodes.c.heartbeat_at < self._plus_seconds(now, literal(-stale_after)))
                .with_for_update()
            ).first()
            if dead is None:
                return None
            conn.execute(delete(nodes).where(nodes.c.id == node_id))
            return self._abandon_claims_of(conn, node_id, reason, now)

    @transient_retry
    def nodes(self) -> list[NodeInfo]:
        with self._tx() as conn:
            return [
                NodeInfo(id=r.id, started_at=r.started_at, heartbeat_at=r.heartbeat_at)
                for r in conn.execute(select(nodes).order_by(nodes.c.id))
            ]

    @transient_retry
    def remove_node(self, node_id: str) -> None:
        with self._tx() as conn:
            conn.execute(delete(nodes).where(nodes.c.id == node_id))

    # -- history ----------------------------------------------------------------------------------

    @transient_retry
    def history(self, *, limit: int = 50, schedule: str | None = None) -> list[RunRecord]:
        query = (
            select(runs, schedules.c.name.label("schedule_name"))
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .order_by(runs.c.id.desc())
            .limit(limit)
        )
        if schedule is not None:
            query = query.where(schedules.c.name == schedule)
        with self._tx() as conn:
            return [_run_record(r) for r in conn.execute(query)]

    # -- admin read queries (tickwork.admin) ------------------------------------------------------

    def _schedule_filters(
        self, state: ScheduleState | None, enabled: bool | None, search: str | None, failing: bool | None = None
    ) -> list[ColumnElement[bool]]:
        conditions: list[ColumnElement[bool]] = []
        if failing is not None:
            # "Last run" as last_runs() defines it: the schedule's highest run id.
            latest = select(func.max(runs.c.id)).group_by(runs.c.schedule_id)
            failed = select(runs.c.schedule_id).where(
                runs.c.id.in_(latest), runs.c.status.in_(sorted(s.value for s in FAILING))
            )
            conditions.append(schedules.c.id.in_(failed) if failing else schedules.c.id.not_in(failed))
        if state is not None:
            conditions.append(schedules.c.state == state.value)
        if enabled is not None:
            conditions.append(schedules.c.enabled.is_(enabled))
        if search:
            needle = search.lower()
            conditions.append(
                or_(
                    func.lower(schedules.c.name).contains(needle, autoescape=True),
                    func.lower(schedules.c.target).contains(needle, autoescape=True),
                )
            )
        return conditions

    @transient_retry
    def find_schedules(
        self,
        *,
        state: ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        failing: bool | None = None,
    ) -> list[Schedule]:
        # NULLS LAST spelled as a CASE: MySQL/MariaDB have no NULLS LAST.
        query = (
            select(schedules)
            .where(*self._schedule_filters(state, enabled, search, failing))
            .order_by(case((schedules.c.next_fire.is_(None), 1), else_=0), schedules.c.next_fire, schedules.c.name)
            .offset(offset)
        )
        if limit is not None:
            query = query.limit(limit)
        with self._tx() as conn:
            return [schedule_from_row(row) for row in conn.execute(query)]

    @transient_retry
    def count_schedules(
        self,
        *,
        state: ScheduleState | None = None,
        enabled: bool | None = None,
        search: str | None = None,
        failing: bool | None = None,
    ) -> int:
        query = (
            select(func.count()).select_from(schedules).where(*self._schedule_filters(state, enabled, search, failing))
        )
        with self._tx() as conn:
            return int(conn.execute(query).scalar_one())

    @transient_retry
    def last_runs(self, schedule_ids: Sequence[int]) -> dict[int, RunRecord]:
        if not schedule_ids:
            return {}
        latest = (
            select(func.max(runs.c.id))
            .where(runs.c.schedule_id.in_(list(schedule_ids)))
            .group_by(runs.c.schedule_id)
            .scalar_subquery()
        )
        query = (
            select(runs, schedules.c.name.label("schedule_name"))
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .where(runs.c.id.in_(latest))
        )
        with self._tx() as conn:
            return {r.schedule_id: _run_record(r) for r in conn.execute(query)}

    @transient_retry
    def find_runs(
        self,
        *,
        schedule: str | None = None,
        status: Sequence[RunStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        node: str | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        query = (
            select(runs, schedules.c.name.label("schedule_name"))
            .join(schedules, schedules.c.id == runs.c.schedule_id)
            .order_by(runs.c.scheduled_for.desc(), runs.c.attempt.desc(), runs.c.id.desc())
            .limit(limit)
        )
        if schedule is not None:
            query = query.where(schedules.c.name == schedule)
        if status:
            query = query.where(runs.c.status.in_([s.value for s in status]))
        if since is not None:
            query = query.where(runs.c.scheduled_for >= since)
        if until is not None:
            query = query.where(runs.c.scheduled_for < until)
        if node is not None:
            query = query.where(runs.c.node == node)
        with self._tx() as conn:
            return [_run_record(r) for r in conn.execute(query)]

    @transient_retry
    def prune_history(self, older_than: timedelta) -> int:
        """Delete finished runs that finished more than ``older_than`` ago (database clock)."""
        cutoff = self._plus_seconds(self.now_expr(), literal(-older_than.total_seconds()))
        # A row at or after its schedule's next fire fences that fire (an abandoned fire released
        # with its fire time unchanged): without it the fire would run again. Kept, however old.
        fences_a_fire = (
            select(schedules.c.id)
            .where(schedules.c.id == runs.c.schedule_id, schedules.c.next_fire <= runs.c.scheduled_for)
            .exists()
        )
        with self._tx() as conn:
            result = conn.execute(
                delete(runs).where(runs.c.status != "running", runs.c.finished_at < cutoff, ~fences_a_fire)
            )
        return int(result.rowcount or 0)


def _run_record(r: Row[Any]) -> RunRecord:
    """A run row joined with its schedule's name (``schedule_name``)."""
    return RunRecord(
        id=r.id,
        schedule=r.schedule_name,
        scheduled_for=r.scheduled_for,
        started_at=r.started_at,
        finished_at=r.finished_at,
        node=r.node,
        status=RunStatus(r.status),
        error=r.error,
        attempt=r.attempt,
    )


def utcnow() -> datetime:
    return datetime.now(UTC)
