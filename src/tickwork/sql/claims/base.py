"""What every claim strategy shares: the due filter, the claim assignment and the interface."""

from __future__ import annotations

from abc import ABC
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from sqlalchemy import (
    CTE,
    BindParameter,
    ColumnElement,
    Connection,
    Integer,
    Row,
    Select,
    String,
    Text,
    Update,
    and_,
    bindparam,
    case,
    cast,
    literal,
    null,
    select,
)
from sqlalchemy.sql.expression import ColumnElement as _CE

from ..schema import claimable, schedules


class ClaimSQL(Protocol):
    """The few dialect-specific pieces of SQL a claim strategy asks its store for (the store
    plugin knows its database; the strategies stay dialect-free)."""

    def insert_ignore(self, table: Any) -> Any:
        """An INSERT into ``table`` that skips rows violating a unique constraint."""

    def materialized(self, cte: CTE) -> CTE:
        """``cte`` evaluated once, before the statement that uses it."""

    def try_lock_row(self, row_id: ColumnElement[Any]) -> ColumnElement[bool]:
        """True where this transaction got a lock on ``row_id`` without waiting (held until the
        transaction ends), false where another transaction holds it."""

    def one_of(self, column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
        """True where ``column`` is one of the list of integers bound as the named parameter
        ``name`` (a statement built once, run with lists of any length)."""

    #: Whether a write waits for a row lock another transaction holds (PostgreSQL, MySQL); not
    #: on SQLite, where one writer holds the whole file: :func:`not_locked_elsewhere` adds nothing.
    row_locks: ClassVar[bool]


class _PortableSQL:
    """Standard SQL only, for a request built without a store (e.g. to EXPLAIN a statement)."""

    row_locks: ClassVar[bool] = True

    def insert_ignore(self, table: Any) -> Any:
        raise NotImplementedError("this claim request was built without a store: no INSERT ... ignore")

    def materialized(self, cte: CTE) -> CTE:
        return cte

    def try_lock_row(self, row_id: ColumnElement[Any]) -> ColumnElement[bool]:
        raise NotImplementedError("this claim request was built without a store: no row try-lock")

    def one_of(self, column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
        return column.in_(bindparam(name, expanding=True))


_PORTABLE = _PortableSQL()


@dataclass(frozen=True)
class ClaimRequest:
    """One claim attempt.

    :param now: SQL expression of the database clock (a bound value under an injected test clock)
    :param owned: SQL condition restricting to this node's hash buckets, ``None`` for all (its
        parameter is named ``owned_buckets``)

    Statements bind the node and the limit as the named parameters ``claim_node`` and
    ``claim_limit`` (:func:`claim_assignment`, :func:`claim_limit`), so that the store can build
    the statement of a strategy that does not read first once and pass new values each time.
    """

    node_id: str
    limit: int
    owned: ColumnElement[bool] | None
    now: ColumnElement[Any]
    #: Claim what is due by this time (``now`` plus the named parameter ``claim_ahead``
    #: seconds when claiming ahead); ``None``: by ``now``.
    due_by: ColumnElement[Any] | None = None
    #: The store's dialect-specific SQL pieces.
    sql: ClaimSQL = _PORTABLE


@dataclass(frozen=True)
class ClaimedRow:
    """A schedule row this node won; ``run_id`` is set when the strategy already inserted the run."""

    row: Row[Any]
    run_id: int | None = None


#: What a claim returns of each won row: the fence, the fire time and the spec (not the
#: bookkeeping columns; converting all 23 columns was 31 % of a node's claim time). The arguments
#: come as JSON text, decoded only for a spec not seen before (:func:`spec_from_row`): decoding
#: them for every claimed row was a quarter of a PostgreSQL claim's client time.
CLAIMED_COLUMNS: tuple[ColumnElement[Any], ...] = (
    schedules.c.id,
    schedules.c.next_fire,
    schedules.c.claim_seq,
    schedules.c.claimed_at,
    schedules.c.updated_at,
    schedules.c.name,
    schedules.c.namespace,
    schedules.c.trigger_kind,
    schedules.c.expression,
    schedules.c.timezone,
    schedules.c.executor,
    schedules.c.target,
    cast(schedules.c.arguments, Text).label("arguments"),
    schedules.c.timeout_s,
    schedules.c.module,
    schedules.c.enabled,
    schedules.c.misfire,
    schedules.c.retries,
    schedules.c.retry_backoff_s,
    # NULL for a schedule that sets none of the rarer options (scheduling/options.py stored_json).
    cast(schedules.c.options, Text).label("options"),
    # The definition's number, which the claim's run rows record (sql/versioning.py).
    schedules.c.version,
)


#: The columns of a started run row, in the order claims insert them.
RUN_COLUMNS = ("schedule_id", "scheduled_for", "attempt", "claim_seq", "node", "started_at", "status", "version")


def run_started_at(next_fire: ColumnElement[Any], claimed_at: ColumnElement[Any]) -> ColumnElement[Any]:
    """The ``started_at`` of a run row written by a claim: the claim time, or NULL for a fire
    claimed ahead of its time (it has not started yet; the end records when it did)."""
    return case((next_fire > claimed_at, null()), else_=claimed_at)


def started_runs(
    schedule_id: Any, next_fire: Any, claim_seq: Any, node: Any, claimed_at: Any, version: Any
) -> Select[Any]:
    """The :data:`RUN_COLUMNS` of the run rows a claim writes for its fires (attempt 1,
    ``running``, the schedule's ``version``), for ``INSERT ... SELECT``; add the
    ``FROM``/``WHERE`` of the claimed rows."""
    return select(
        schedule_id,
        next_fire,
        literal(1),
        claim_seq,
        node,
        run_started_at(next_fire, claimed_at),
        literal("running"),
        version,
    )


def due_filter(req: ClaimRequest) -> ColumnElement[bool]:
    """Enabled, idle, due by the database clock, in an owned bucket.

    Every strategy re-checks this on the newest version of the row it takes: a guard on "nobody
    holds it" alone lets a loser re-take a row another node has just finished (measured: 3-11%
    doubles).
    """
    due_by = req.now if req.due_by is None else req.due_by
    cond: _CE[bool] = and_(claimable(), schedules.c.next_fire <= due_by)
    if req.owned is not None:
        cond = and_(cond, req.owned)
    return cond


def claim_limit(req: ClaimRequest) -> BindParameter[int]:
    """``req.limit`` as the named parameter ``claim_limit`` (see :class:`ClaimRequest`)."""
    return bindparam("claim_limit", req.limit, type_=Integer)


def due_ids(req: ClaimRequest) -> Select[Any]:
    """Ids of up to ``claim_limit`` (:func:`claim_limit`) due rows, earliest first: what every
    strategy that picks rows before taking them reads (add its locking clause)."""
    return select(schedules.c.id).where(due_filter(req)).order_by(schedules.c.next_fire).limit(claim_limit(req))


def among_candidates(req: ClaimRequest) -> ColumnElement[bool]:
    """The row is one of those a strategy that reads first found (:meth:`ClaimStrategy.candidates`),
    the list bound as the named parameter ``claim_ids``."""
    return req.sql.one_of(schedules.c.id, "claim_ids")


def not_locked_elsewhere(
    req: ClaimRequest, *where: ColumnElement[bool], key_share: bool = False
) -> ColumnElement[bool]:
    """The row is one of those ``where`` picks that no other transaction holds locked: locked
    here by a sub-select ``FOR UPDATE SKIP LOCKED`` (``key_share``: ``FOR NO KEY UPDATE``, which
    lets other transactions' key-share locks be). Without row locks (SQLite) just ``where``.

    For the UPDATE of a strategy that does not pick its rows by locking them: a row another
    session holds locked (a stray ``SELECT ... FOR UPDATE``, another node's transaction) is
    claimed around, not waited for. Waiting failed the whole claim after ``lock_timeout``, pass
    after pass while the lock held: the node claimed nothing at all (docs/claim-protocol.md,
    "Locks held by other sessions"). Between tickwork's nodes the outcome is the one waiting
    gave, sooner: the row another node is taking is not due any more once it commits."""
    if not req.sql.row_locks:
        return and_(*where)
    lockable = select(schedules.c.id).where(*where).with_for_update(key_share=key_share, skip_locked=True)
    return schedules.c.id.in_(lockable.scalar_subquery())


def claim_assignment(req: ClaimRequest) -> dict[str, Any]:
    """The SET clause of a claim: running, held by this node (the named parameter
    ``claim_node``), a fresh fence token."""
    return {
        "state": "running",
        "claimed_by": bindparam("claim_node", req.node_id, type_=String),
        "claimed_at": req.now,
        "claim_seq": schedules.c.claim_seq + 1,
    }


class ClaimStrategy(ABC):
    """One way of turning due schedules into claims; see docs/claim-strategies.md.

    A strategy runs inside a transaction the store opened and must only return rows it won,
    each re-checked against :func:`due_filter` on the row version it took.

    Most strategies end in one UPDATE that takes the rows; they implement :meth:`take` and the
    store adds the RETURNING clause (and, where its database can, inserts the history rows in
    the same statement). Which strategies a database supports is its store plugin's
    ``claim_strategies``; a strategy asks the store for dialect-specific pieces
    (:class:`ClaimSQL`). A strategy that needs more overrides :meth:`claim` and sets
    ``single_update`` to false.
    """

    name: ClassVar[str]
    #: When true the store claims one row per transaction (the strategy's own cost model).
    one_per_transaction: ClassVar[bool] = False
    #: When true the claim is :meth:`take`'s UPDATE (after any reads :meth:`take` makes).
    single_update: ClassVar[bool] = True
    #: When true the store first reads the ids of the candidates (:meth:`candidates`) and
    #: :meth:`take`'s UPDATE is restricted to them (the named parameter ``claim_ids``,
    #: :func:`among_candidates`); nothing is taken when the read finds none. Either way the
    #: statements depend only on the request's named parameters: the store builds them once.
    reads_first: ClassVar[bool] = False

    def candidates(self, req: ClaimRequest) -> Select[Any]:
        """The read of a strategy that reads first: :func:`due_ids`, without locks."""
        return due_ids(req)

    def take(self, conn: Connection, req: ClaimRequest) -> Update:
        """Build the UPDATE that takes up to ``req.limit`` due rows, without RETURNING.

        :param conn: the claim's transaction (the statement is built once and run for every
            claim: it must not read anything or depend on anything but the named parameters)
        """
        raise NotImplementedError(f"claim strategy {self.name!r} has no single take statement")

    def claim(self, conn: Connection, req: ClaimRequest) -> list[ClaimedRow]:
        """Claim up to ``req.limit`` due schedules.

        :return: the won rows, with at least :data:`CLAIMED_COLUMNS`
        """
        return [ClaimedRow(row) for row in conn.execute(self.take(conn, req).returning(*CLAIMED_COLUMNS))]
