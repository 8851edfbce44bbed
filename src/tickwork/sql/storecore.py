"""The core of the SQLAlchemy Core store: engine, transactions, statement cache, dialect hooks,
and the row helpers its parts share (:mod:`tickwork.sql.store` assembles the parts)."""

from __future__ import annotations

import functools
import json
import logging
import random
import time
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, NamedTuple, TypeVar

from alembic.util.exc import CommandError
from sqlalchemy import (
    CTE,
    ColumnElement,
    Connection,
    Engine,
    Float,
    LargeBinary,
    Row,
    Select,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
)
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from .. import structures
from ..abc import Store
from ..config.numbers import integer
from ..errors import (
    ConfigError,
    SchemaOutdatedError,
    StoreError,
)
from ..structures import (
    BUCKETS,
    Finish,
    MisfirePolicy,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleSpec,
    ScheduleState,
)
from . import migrations
from .claims import STRATEGIES, ClaimStrategy
from .prepared import Prepared
from .schema import UTCDateTime, schedules

log = logging.getLogger("tickwork.store")

#: The history's cap on error texts (tickwork.structures), under the names the SQL layer exports.
MAX_ERROR_CHARS = structures.MAX_ERROR_CHARS
cap = structures.cap_error
#: The SET clause that leaves a schedule held by no node, its next fire time unchanged.
UNHELD: dict[str, Any] = {"state": "idle", "claimed_by": None, "claimed_at": None, "retimed": False}


def _arguments(stored: Any) -> dict[str, Any]:
    # JSON text from a claim (CLAIMED_COLUMNS), already decoded elsewhere. Most schedules have
    # none: "{}" skips the decoder, whose call costs more than the empty object.
    if isinstance(stored, str | bytes):
        if stored in ("{}", b"{}"):
            return {}
        stored = json.loads(stored)
    return dict(stored or {})


@functools.lru_cache(maxsize=1024)
def _seconds(value: float) -> timedelta:
    """A stored number of seconds as a timedelta (immutable, so shared: a fleet's schedules
    repeat a few timeouts and backoffs)."""
    return timedelta(seconds=value)


def spec_from_row(r: Mapping[Any, Any]) -> ScheduleSpec:
    """The spec of a schedule row (by key: a Row's attribute access costs 5x more, and this runs
    for every claimed row not seen before)."""
    return ScheduleSpec.stored(
        {
            "name": r["name"],
            "trigger_kind": r["trigger_kind"],
            "expression": r["expression"],
            "timezone": r["timezone"],
            "executor": r["executor"],
            "target": r["target"],
            "arguments": _arguments(r["arguments"]),
            "timeout": _seconds(r["timeout_s"]),
            "module": r["module"],
            "enabled": bool(r["enabled"]),
            "misfire": MisfirePolicy(r["misfire"]) if r["misfire"] else None,
            "retries": r["retries"],
            "retry_backoff": _seconds(r["retry_backoff_s"]),
        },
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


#: The byte of an owned bucket in :func:`owned_mask`, and of one not owned (the ownership test is
#: "greater than NOT_OWNED"; see SQLCore._owned).
OWNED = b"\x01"
NOT_OWNED = b"\x00"


class Ownership(NamedTuple):
    """A bucket set's mask and the ownership filters built on it (:meth:`SQLCore._owned`)."""

    mask: bytes
    owned: ColumnElement[bool]
    #: ``owned`` or overdue, per ``steal_after`` (filled as claims ask for it).
    or_overdue: dict[float, ColumnElement[bool]]


def owned_mask(buckets: Sequence[int]) -> bytes:
    """One byte per bucket, :data:`OWNED` where the node owns it (byte ``b`` for bucket ``b``)."""
    mask = bytearray(NOT_OWNED * max(BUCKETS, max(buckets, default=-1) + 1))
    for bucket in buckets:
        mask[bucket] = OWNED[0]
    return bytes(mask)


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
    def wrapper(self: SQLCore, *args: Any, **kwargs: Any) -> Any:
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


class SQLCore(Store):
    """What every part of the SQL store shares: the engine, the statement cache, transactions,
    the database clock, the ownership filter, the schema's lifecycle and the dialect hooks.

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
        #: Mask and filters per bucket set: a ring changes rarely, a claim asks for them every pass.
        self._ownership: dict[tuple[int, ...], Ownership] = {}

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

    def _owned(self, buckets: Sequence[int] | None, steal_after: float | None = None) -> ColumnElement[bool] | None:
        """The ownership filter of the due query: the row's byte in a mask of the owned buckets
        (parameter ``owned_buckets``), or with ``steal_after`` also any fire overdue by that many
        seconds by the database clock (parameter ``steal_after``; see
        :meth:`tickwork.abc.Store.claim_due`).

        One bound value whatever the ring looks like, and a constant-time test per row: an
        ``IN`` list (or ``= ANY(array)``) of the ~500 buckets a node owns is scanned for every
        candidate row, which made ``hashring`` slower than ``all``. ``substr`` of a binary
        string is the same function on SQLite, PostgreSQL and MySQL."""
        if buckets is None:
            return None
        ownership = self._ownership_of(buckets)
        if steal_after is None:
            return ownership.owned
        found = ownership.or_overdue.get(steal_after)
        if found is None:
            # An OR of the two tests: the claim still reads the due index in fire-time order and
            # tests each row (tests/test_claim_plans.py). The value is bound in the expression
            # for strategies that execute it as built.
            since = self._plus_seconds(self.now_expr(), -bindparam("steal_after", steal_after, type_=Float))
            found = ownership.or_overdue[steal_after] = or_(ownership.owned, schedules.c.next_fire <= since)
        return found

    def owned_mask(self, buckets: Sequence[int]) -> bytes:
        """:func:`owned_mask`, remembered per bucket set."""
        return self._ownership_of(buckets).mask

    def _ownership_of(self, buckets: Sequence[int]) -> Ownership:
        # Built once per ring: building the filter expression cost more than the bucket test.
        key = tuple(buckets)
        found = self._ownership.get(key)
        if found is None:
            if len(self._ownership) > 64:
                self._ownership.clear()
            mask = owned_mask(key)
            param = bindparam("owned_buckets", mask, type_=LargeBinary)
            # "> x'00'", not "= x'01'": the mask holds only those two bytes, but PostgreSQL
            # estimates an equality on an expression at 0.5 % of the rows and then scans and
            # sorts every due row for a claim of 100 instead of reading the due index in order
            # (5 ms against 0.1 ms with 10,000 due; docs/benchmarks.md). An inequality is
            # estimated at a third. A bucket past the mask's end gives an empty string: not owned.
            owned = func.substr(param, schedules.c.bucket + 1, 1) > literal(NOT_OWNED, LargeBinary)
            found = self._ownership[key] = Ownership(mask, owned, {})
        return found

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

    def _prepared(self, key: str, build: Callable[[], Any]) -> Prepared:
        """A hot statement, built once per store and executed as :meth:`prepare` decides."""
        return self._statement(f"prepared/{key}", lambda: self.prepare(build()))

    def prepare(self, statement: Any) -> Prepared:
        """How this store executes the statements it runs for every batch of fires (see
        :mod:`tickwork.sql.prepared`): through SQLAlchemy unless a store says otherwise."""
        return Prepared(statement)

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
            with self._begin() as conn:
                yield conn
        except IntegrityError:
            raise
        except (OperationalError, DBAPIError) as exc:
            raise StoreError(f"{self.database_label} store: {exc.orig or exc}") from exc

    def _begin(self) -> AbstractContextManager[Connection]:
        """A transaction on a connection (committed if the block ends without an exception):
        one from the engine's pool unless a store keeps its own."""
        return self.engine.begin()

    def open(self, *, check_schema: bool = True) -> None:
        current, head = self.schema_revisions()
        if current is None and self.create_empty:
            log.info("creating the tickwork schema in the empty %s", self.describe())
            self.upgrade()
            current = head
        if check_schema and current != head:
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

    def now_query(self) -> Select[Any]:
        """``SELECT`` of :meth:`now_expr`, built once."""
        return self._statement("now", lambda: select(self.now_expr()))

    @transient_retry
    def now(self) -> datetime:
        with self._tx() as conn:
            value = conn.execute(self.now_query()).scalar_one()
        assert isinstance(value, datetime)
        return value

    @abstractmethod
    def insert_ignore(self, table: Any) -> Any:
        """An INSERT that skips rows violating a unique constraint (``ON CONFLICT DO NOTHING``).
        Part of :class:`~tickwork.sql.claims.ClaimSQL`: claim strategies ask the store for it."""

    def materialized(self, cte: CTE) -> CTE:
        """``cte`` evaluated once, before the statement that uses it (PostgreSQL needs the
        ``MATERIALIZED`` keyword for that; most databases do it anyway)."""
        return cte

    def one_of(self, column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
        """``column IN`` the list bound as ``name`` (:class:`~tickwork.sql.claims.ClaimSQL`): an
        expanding parameter, one placeholder per value."""
        return column.in_(bindparam(name, expanding=True))

    def try_lock_row(self, row_id: ColumnElement[Any]) -> ColumnElement[bool]:
        """A transaction-scoped try-lock on ``row_id`` (the ``advisory`` strategy); only stores
        that list that strategy provide one."""
        raise NotImplementedError(f"the {self.database_label} store has no transaction-scoped row try-lock")


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
