"""The core of the SQLAlchemy Core store: its checked options, the engine and its transactions,
the clock every statement reads, and the parts it is composed of — the database's
:class:`~tickwork.sql.features.Features` and :class:`~tickwork.sql.features.Operations`, the
:class:`~tickwork.sql.statements.StatementCache` and the
:class:`~tickwork.sql.buckets.BucketFilters` (:mod:`tickwork.sql.store` assembles the store)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from sqlalchemy import ColumnElement, Connection, Engine, Select, bindparam, case, select
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from ..abc import Store
from ..errors import StoreError
from ..structures import ScheduleSpec
from . import lifecycle
from .buckets import BucketFilters
from .claims import STRATEGIES, ClaimStrategy
from .features import Features, Operations
from .prepared import Prepared
from .retry import ATTEMPTS, transient_retry
from .rows import UNHELD
from .schema import UTCDateTime, schedules
from .settings import SQLStoreSettings
from .statements import StatementCache

S = TypeVar("S")


class SQLCore(Store):
    """What every part of the SQL store shares. A store plugin subclasses
    :class:`~tickwork.sql.store.SQLStore`, names its :attr:`operations_class` and creates the
    engine; everything else is one code path that branches on :attr:`features`.

    :param options: the keys of the store's :attr:`section` (``claim``, ``batch_size``, ...),
        checked by it into :attr:`settings`; absent ones take their declared defaults
    :param clock: replaces the database clock with a function returning aware UTC datetimes
        (e.g. :class:`tickwork.testing.FakeClock`), read at every statement's execution
    """

    #: The database's name in messages; also the SQLAlchemy dialect ``tickwork db upgrade --sql``
    #: renders the migrations for (``sqlite``, ``postgresql``, ``mysql``).
    database_label: ClassVar[str]
    #: The database's way of spelling what differs (:mod:`tickwork.sql.features`).
    operations_class: ClassVar[type[Operations]]
    #: The store's checked options (a subclass narrows the type to its :attr:`section`).
    settings: SQLStoreSettings
    #: Create the schema in a database that has none (never migrates an existing older one).
    create_empty: bool = False
    #: Runs of an operation before a transient error (:meth:`is_transient`) propagates.
    transient_attempts: int = ATTEMPTS

    def __init__(self, *, clock: Callable[[], datetime] | None = None, **options: Any) -> None:
        settings = type(self).section(**options)
        assert isinstance(settings, SQLStoreSettings), f"{type(self).__name__}.section must extend SQLStoreSettings"
        self.settings = settings
        self.strategy: ClaimStrategy = STRATEGIES[settings["claim"]]()
        self.batch_size = settings.batch_size
        self.clock = clock
        self.operations = self.operations_class()
        self._engine: Engine | None = None
        self._features: Features | None = None
        #: Statements executed by this store (for benchmarks' statements-per-fire).
        self.statements = 0
        #: Specs of claimed rows by (id, updated_at) (see ClaimedRuns._spec).
        self._specs: dict[tuple[int, datetime], ScheduleSpec] = {}
        self.cache = StatementCache(lambda stmt: self.operations.prepare(stmt, self.engine.dialect))
        self.buckets = BucketFilters(self.now_expr, self.operations.plus_seconds)
        #: The executor names each node of this process announced, as stored (a JSON list): a
        #: record the heartbeat creates again after a rejoin carries them (NodeState).
        self.announced: dict[str, str] = {}
        #: The namespaces holding schedules, when they were read (monotonic), and the fair
        #: claim's next first turn (sql/claimturns.py).
        self._namespaces: tuple[str, ...] = ()
        self._namespaces_read = float("-inf")
        self._turn = 0
        #: Dead nodes whose release passed rows over as locked, with how many were last warned
        #: about (NodeState): warned again only when that changes.
        self._locked_dead: dict[str, int] = {}

    @abstractmethod
    def _create_engine(self) -> Engine:
        """Create the engine (connect lazily; errors surface in :meth:`open`)."""

    @property
    def features(self) -> Features:
        """What the database can do, read from SQLAlchemy's dialect once it met the server."""
        found = self._features
        if found is None:
            engine = self.engine
            if engine.dialect.server_version_info is None:
                with self._tx():  # the dialect learns the server's version on first connect
                    pass
            found = self._features = Features.of(engine.dialect, self.operations)
        return found

    # -- the parts' hooks, by their old names -------------------------------------------------------

    def _plus_seconds(self, value: ColumnElement[Any], seconds: ColumnElement[Any]) -> ColumnElement[Any]:
        return self.operations.plus_seconds(value, seconds)

    def _notify(self, conn: Connection) -> None:
        self.operations.notify(conn)

    def insert_ignore(self, table: Any) -> Any:
        return self.operations.insert_ignore(table)

    def _owned(self, buckets: Sequence[int] | None, steal_after: float | None = None) -> ColumnElement[bool] | None:
        """:meth:`BucketFilters.owned <tickwork.sql.buckets.BucketFilters.owned>`."""
        return self.buckets.owned(buckets, steal_after)

    def owned_mask(self, buckets: Sequence[int]) -> bytes:
        """The mask of ``buckets`` (:func:`~tickwork.sql.buckets.owned_mask`), remembered per set."""
        return self.buckets.of(buckets).mask

    def _statement(self, key: str, build: Callable[[], S]) -> S:
        return self.cache.get(key, build)

    def _prepared(self, key: str, build: Callable[[], Any]) -> Prepared:
        return self.cache.prepared(key, build)

    def is_transient(self, error: DBAPIError) -> bool:
        return self.operations.is_transient(error)

    def lock_schedule_writes(self, conn: Connection) -> None:
        self.operations.lock_schedule_writes(conn)

    def refresh_statistics(self) -> None:
        """Refresh the planner statistics of the schedules table (after a bulk change: tools and
        benchmarks that write rows directly)."""
        with self._tx() as conn:
            self.operations.analyze(conn)

    def announce_changes(self) -> None:
        """Tell listening nodes that schedules changed (after rows were written directly)."""
        with self._tx() as conn:
            self._notify(conn)

    def release_values(self, next_fire: ColumnElement[Any] | Any) -> dict[str, Any]:
        """The SET clause of a fenced release; a pending "run now" makes the schedule due at once,
        and a next fire a write chose during the run (:func:`~tickwork.sql.rows.next_fire_values`)
        wins over the run's."""
        return {
            **UNHELD,
            "fire_requested_at": None,
            # A write during the run (update, enable, disable, pause, resume, sync) chose the
            # next fire: the run's, computed from the definition it was claimed under, does not
            # overwrite it.
            "next_fire": case(
                (schedules.c.fire_requested_at.is_not(None), self.now_expr()),
                (schedules.c.retimed, schedules.c.retimed_next),
                else_=next_fire,
            ),
        }

    # -- engine, transactions, clock --------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise StoreError("store is not open; call open() first")
        return self._engine

    def connected_engine(self) -> Engine:
        """The engine, created if the store has none yet (migrations run before :meth:`open`)."""
        if self._engine is None:
            self._engine = self._create_engine()
        return self._engine

    def now_expr(self) -> ColumnElement[Any]:
        """The clock every statement reads: the database's, or a ``clock`` given to the store,
        bound as a parameter whose value is read at each execution — so a statement built once
        and cached runs under a test clock exactly as it does in production."""
        if self.clock is not None:
            return bindparam("tickwork_now", callable_=self.clock, type_=UTCDateTime)
        return self.operations.db_now()

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

    def now_query(self) -> Select[Any]:
        """``SELECT`` of :meth:`now_expr`, built once."""
        return self._statement("now", lambda: select(self.now_expr()))

    @transient_retry
    def now(self) -> datetime:
        with self._tx() as conn:
            value = conn.execute(self.now_query()).scalar_one()
        assert isinstance(value, datetime)
        return value

    # -- lifecycle (tickwork.sql.lifecycle) -------------------------------------------------------

    def open(self, *, check_schema: bool = True) -> None:
        lifecycle.open_schema(self, check_schema=check_schema)

    def describe(self) -> str:
        return f"{self.database_label} database"

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
            self._features = None

    def upgrade(self) -> None:
        lifecycle.upgrade(self)

    def schema_revisions(self) -> tuple[str | None, str]:
        return lifecycle.revisions(self)

    def upgrade_sql(self) -> str:
        return lifecycle.upgrade_sql(self)
