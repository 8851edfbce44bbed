"""What a claim may take (:class:`ClaimScope`: buckets, look-ahead, stealing, namespaces) and the
turns the fair claim takes between namespaces (docs/teams.md#fair-firing)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import ColumnElement, Integer, Select, String, and_, bindparam, func, literal, literal_column, select

from ..abc import NextDueSink
from ..structures import Claim, check_namespace
from .retry import transient_retry
from .schema import schedules
from .storecore import SQLCore


def applied_steal_after(buckets: Sequence[int] | None, steal_after: float | None) -> float | None:
    """``steal_after`` as it applies: ``None`` without buckets (every bucket is claimable anyway)."""
    return None if buckets is None else steal_after


class ClaimScope(NamedTuple):
    """Which fires a claim may take: in ``buckets`` (``None``: all), due within ``ahead``
    seconds, and with ``steal_after`` (only with buckets) any overdue by that many seconds; of
    the ``served`` namespaces (``None``: all) and, for one turn of the fair claim, of the one
    namespace ``one`` (bound as the parameter ``claim_namespace``)."""

    buckets: Sequence[int] | None
    ahead: float
    steal_after: float | None
    served: tuple[str, ...] | None = None
    one: str | None = None

    @classmethod
    def of(
        cls,
        buckets: Sequence[int] | None,
        ahead: float,
        steal_after: float | None,
        served: Sequence[str] | None = None,
    ) -> ClaimScope:
        """The scope of :meth:`tickwork.abc.Store.claim_due`'s arguments."""
        return cls(buckets, ahead, applied_steal_after(buckets, steal_after), served_namespaces(served))

    @property
    def key(self) -> str:
        """What the claim's statements depend on (their cache key); the values are parameters
        (the served namespaces, fixed for a node, are part of the statement)."""
        return (
            f"{self.buckets is None}/{self.ahead > 0}/{self.steal_after is not None}/{self.served}/{self.one is None}"
        )


def served_namespaces(namespaces: Sequence[str] | None) -> tuple[str, ...] | None:
    """``[scheduler] namespaces`` as a claim's scope holds it: checked, sorted, each once."""
    if namespaces is None:
        return None
    for namespace in namespaces:
        check_namespace(namespace)  # written into the statement below: letters, digits, '-', '_', '.'
    return tuple(sorted(set(namespaces)))


def namespace_filter(served: tuple[str, ...] | None, one: str | None) -> ColumnElement[bool] | None:
    """The namespaces a claim may take from: the ``served`` ones (``None``: all), and with ``one``
    only that namespace, bound as the parameter ``claim_namespace`` (a turn of the fair claim; a
    statement built once is run with the namespace of each turn)."""
    terms: list[ColumnElement[bool]] = []
    if served is not None:
        # As SQL literals (checked names, no quote can occur): part of a statement built once per
        # node, which the prepared statements of some stores cannot expand a list parameter into.
        terms.append(schedules.c.namespace.in_([literal_column(f"'{n}'") for n in served]))
    if one is not None:
        terms.append(schedules.c.namespace == bindparam("claim_namespace", one, type_=String))
    return and_(*terms) if terms else None


#: How long a store trusts its list of the namespaces that hold schedules
#: (:meth:`NamespaceTurns.known_namespaces`).
NAMESPACES_FRESH = 1.0

#: The most namespaces one statement of :func:`namespace_walk` names (below MySQL's default
#: ``cte_max_recursion_depth`` of 1,000); more are read by further statements.
NAMESPACE_WALK_STEPS = 500


def namespace_walk() -> Select[Any]:
    """The namespaces after the parameter ``after``, in order, up to :data:`NAMESPACE_WALK_STEPS`:
    a recursive walk of the unique index on (namespace, name), each step the least namespace
    after the one before (a loose index scan, which no database here does by itself)."""
    later = schedules.alias("later")
    first = select(func.min(schedules.c.namespace).label("namespace"), literal(1, Integer).label("step")).where(
        schedules.c.namespace > bindparam("after", type_=String)
    )
    walk = first.cte("known_namespaces", recursive=True)
    following = select(func.min(later.c.namespace)).where(later.c.namespace > walk.c.namespace).scalar_subquery()
    walk = walk.union_all(
        select(following, walk.c.step + 1).where(walk.c.namespace.is_not(None), walk.c.step < NAMESPACE_WALK_STEPS)
    )
    return select(walk.c.namespace).where(walk.c.namespace.is_not(None)).order_by(walk.c.step)


class NamespaceTurns(SQLCore):
    """The fair claim's turns between namespaces, and the namespace terms of a claim."""

    if TYPE_CHECKING:

        def _claim_scope(
            self, node_id: str, limit: int, scope: ClaimScope, next_due: NextDueSink | None = None
        ) -> list[Claim]: ...

    def _claim_fairly(self, node_id: str, limit: int, scope: ClaimScope, turns: list[str]) -> list[Claim]:
        """The fair claim (docs/teams.md#fair-firing): each namespace in turn takes up to an equal
        share of ``limit`` from its own earliest due fires (its own index range), so a herd in
        one does not stand before another's fires; what the shares left is then offered to the
        namespaces that filled theirs, and last to every served namespace at once (one the list
        of known namespaces does not hold yet). The turns rotate from claim to claim."""
        start = self._turn % len(turns)
        self._turn += 1
        order = turns[start:] + turns[:start]
        share = max(1, limit // len(order))
        claims: list[Claim] = []
        full: list[str] = []
        for namespace in order:
            room = min(share, limit - len(claims))
            if room <= 0:
                break
            got = self._claim_scope(node_id, room, scope._replace(one=namespace))
            claims.extend(got)
            if len(got) >= room:
                full.append(namespace)
        for namespace in full:
            room = limit - len(claims)
            if room <= 0:
                break
            claims.extend(self._claim_scope(node_id, room, scope._replace(one=namespace)))
        if len(claims) < limit and not full:
            claims.extend(self._claim_scope(node_id, limit - len(claims), scope))
        claims.sort(key=lambda c: (c.scheduled_for, c.schedule_id))
        return claims

    @transient_retry
    def known_namespaces(self) -> tuple[str, ...]:
        """The namespaces that hold schedules, read at most every :data:`NAMESPACES_FRESH`
        seconds: one index probe per namespace (the next one after the last, in the unique
        index on (namespace, name)), whatever the number of schedules, all of them walked by
        one recursive statement (a statement per probe was two a second on every node with a
        single namespace: 0.006 statements per fire of a spread load of 1,000 a second)."""
        now = time.monotonic()
        if now - self._namespaces_read < NAMESPACES_FRESH:
            return self._namespaces
        found: list[str] = []
        query = self._statement("namespaces/walk", namespace_walk)
        with self._tx() as conn:
            while True:
                names = [str(n) for n in conn.scalars(query, {"after": found[-1] if found else ""})]
                self.statements += 1
                found.extend(names)
                if len(names) < NAMESPACE_WALK_STEPS:
                    break
        self._namespaces, self._namespaces_read = tuple(found), now
        return self._namespaces

    def _claim_filter(self, scope: ClaimScope) -> ColumnElement[bool] | None:
        """The bucket ownership and namespace terms of a claim (the request's ``owned``)."""
        owned = self._owned(scope.buckets, scope.steal_after)
        served = namespace_filter(scope.served, scope.one)
        if served is None:
            return owned
        return served if owned is None else and_(served, owned)
