"""What every claim strategy shares: the due filter, the claim assignment and the interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from sqlalchemy import ColumnElement, Connection, Row, and_, literal
from sqlalchemy.sql.expression import ColumnElement as _CE

from ..schema import claimable, schedules


@dataclass(frozen=True)
class ClaimRequest:
    """One claim attempt.

    :param now: SQL expression of the database clock (a bound value under an injected test clock)
    :param owned: SQL condition restricting to this node's hash buckets, ``None`` for all
    """

    node_id: str
    limit: int
    owned: ColumnElement[bool] | None
    now: ColumnElement[Any]


@dataclass(frozen=True)
class ClaimedRow:
    """A schedule row this node won; ``run_id`` is set when the strategy already inserted the run."""

    row: Row[Any]
    run_id: int | None = None


def due_filter(req: ClaimRequest) -> ColumnElement[bool]:
    """Enabled, idle, due by the database clock, in an owned bucket.

    Every strategy re-checks this in the statement that takes the row: a guard on "nobody holds
    it" alone lets a loser re-take a row another node has just finished (measured: 3-11% doubles).
    """
    cond: _CE[bool] = and_(claimable(), schedules.c.next_fire <= req.now)
    if req.owned is not None:
        cond = and_(cond, req.owned)
    return cond


def claim_assignment(req: ClaimRequest) -> dict[str, Any]:
    """The SET clause of a claim: running, held by this node, a fresh fence token."""
    return {
        "state": "running",
        "claimed_by": literal(req.node_id),
        "claimed_at": req.now,
        "claim_seq": schedules.c.claim_seq + 1,
    }


class ClaimStrategy(ABC):
    """One way of turning due schedules into claims; see docs/claim-strategies.md.

    A strategy runs inside a transaction the store opened and must only return rows it won,
    each re-checked against :func:`due_filter` in the statement that took it.
    """

    name: ClassVar[str]
    #: SQLAlchemy dialect names the strategy works on.
    dialects: ClassVar[frozenset[str]]
    #: When true the store claims one row per transaction (the strategy's own cost model).
    one_per_transaction: ClassVar[bool] = False

    @abstractmethod
    def claim(self, conn: Connection, req: ClaimRequest) -> list[ClaimedRow]:
        """Claim up to ``req.limit`` due schedules; return the won rows (all schedule columns)."""
