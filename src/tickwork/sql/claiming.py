"""Claiming due fires (through the configured claim strategy), the time the next one is due, and
giving claims back. The run rows of what a claim won are written by :mod:`.claimedruns`, the fair
claim's turns between namespaces taken by :mod:`.claimturns`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    Select,
    Update,
    bindparam,
    delete,
    func,
    select,
    tuple_,
    update,
)

from ..abc import CLAIM_GROWTH, NextDueSink
from ..structures import Claim
from .claimedruns import ClaimedRuns
from .claims import CLAIMED_COLUMNS, ClaimRequest, writethenread
from .claimturns import ClaimScope, NamespaceTurns, applied_steal_after, namespace_filter, served_namespaces
from .retry import transient_retry
from .rows import UNHELD
from .schema import claimable, runs, schedules


class Claiming(ClaimedRuns, NamespaceTurns):
    """Claiming due fires (through the configured claim strategy), the time the next one is due,
    and giving claims back."""

    @property
    def claim_ceiling(self) -> int:
        # One statement takes a claim whatever its size, except with a strategy that claims one
        # fire per transaction: a larger claim there is only a longer pass.
        return self.batch_size if self.strategy.one_per_transaction else CLAIM_GROWTH * self.batch_size

    #: Claims without ``UPDATE ... RETURNING`` read the next due time in their read back
    #: (:meth:`_claim_then_read`); the others never call ``next_due``.
    claim_reads_next_due: ClassVar[bool] = True

    def claim_due(
        self,
        node_id: str,
        *,
        limit: int,
        buckets: Sequence[int] | None,
        ahead: float = 0.0,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
        next_due: NextDueSink | None = None,
    ) -> list[Claim]:
        limit = max(1, min(limit, self.claim_ceiling))
        scope = ClaimScope.of(buckets, ahead, steal_after, namespaces)
        known = self.known_namespaces()
        turns = list(known if scope.served is None else (n for n in known if n in scope.served))
        if len(turns) <= 1:
            return self._claim_scope(node_id, limit, scope, next_due)
        return self._claim_fairly(node_id, limit, scope, turns)

    def _claim_scope(
        self, node_id: str, limit: int, scope: ClaimScope, next_due: NextDueSink | None = None
    ) -> list[Claim]:
        if self.strategy.one_per_transaction:
            claims: list[Claim] = []
            for _ in range(limit):
                got = self._claim_once(node_id, 1, scope)
                if not got:
                    break
                claims.extend(got)
            return claims
        return self._claim_once(node_id, limit, scope, next_due)

    @transient_retry
    def _claim_once(
        self, node_id: str, limit: int, scope: ClaimScope, next_due: NextDueSink | None = None
    ) -> list[Claim]:
        if not self.features.update_returning:
            return self._claim_then_read(node_id, limit, scope, next_due)
        with self._tx() as conn:
            req = self._claim_request(node_id, limit, scope)
            strategy = self.strategy
            if not strategy.single_update:
                won = strategy.claim(conn, req)
                self.statements += 2
                if not won:
                    return []
                return self._record_runs(
                    conn, node_id, [c.row._mapping for c in won], {c.row.id: c.run_id for c in won if c.run_id}
                )
            params = self._claim_params(node_id, limit, scope)
            if strategy.reads_first:
                read = self._prepared(f"claim_read/{scope.key}", lambda: strategy.candidates(req))
                ids = read.scalars(conn, params)
                self.statements += 1
                if not ids:
                    return []
                params["claim_ids"] = ids
            claim = self._prepared(f"claim/{scope.key}", lambda: self._single_claim_statement(conn, req, scope))
            rows = claim.mappings(conn, params)
            self.statements += 1
            if self.claim_records_runs:
                return self._claims(rows, {r["id"]: r["run_id"] for r in rows if r["run_id"] is not None})
            return self._record_runs(conn, node_id, rows, {}) if rows else []

    def _claim_then_read(
        self, node_id: str, limit: int, scope: ClaimScope, next_due: NextDueSink | None
    ) -> list[Claim]:
        """:meth:`_claim_once` without ``UPDATE ... RETURNING`` (:mod:`.claims.writethenread`).
        A claim that read fewer due ids than ``limit`` drains what is due: its read back of the
        rows won also reads the next due time for ``next_due``, a statement the node would
        otherwise send right after (the claim's own writes are visible to it, and it reads what
        other transactions committed by then, as a read after the commit would)."""
        with self._tx() as conn:
            owned = self._claim_filter(scope)
            if self.strategy.name == "unique-fire":
                now = conn.execute(self.now_query()).scalar_one()
                req = writethenread.request(node_id, limit, owned, now, scope.ahead, self.operations)
                rows, run_ids = writethenread.unique_fire(conn, req, now)
                self.statements += 6
                return self._record_runs(conn, node_id, rows, run_ids) if rows else []
            if self.strategy.name == "skip-locked":
                ids, now = writethenread.locked_due(conn, self._claim_request(node_id, limit, scope))
                self.statements += 1
                if not ids:
                    return []
                req = writethenread.request(node_id, limit, owned, now, scope.ahead, self.operations)
            else:
                now = conn.execute(self.now_query()).scalar_one()
                req = writethenread.request(node_id, limit, owned, now, scope.ahead, self.operations)
                ids = writethenread.candidates(conn, req)
                self.statements += 2
                if ids:
                    ids = writethenread.lockable_now(conn, ids)
                    self.statements += 1
            # Told only by a claim that drains what is due (fewer ids than its limit).
            told = next_due if len(ids) < limit else None
            also = [] if told is None else self._next_due_columns(scope.buckets, scope.steal_after, scope.served)
            rows = writethenread.take(conn, req, ids, now, also=also)
            self.statements += 2 if ids else 0
            if not rows:
                return []
            if told is not None:
                told(next_due_of(rows[0]["next_owned"], rows[0].get("next_late"), scope.steal_after))
            return self._record_runs(conn, node_id, rows, {})

    def _claim_request(self, node_id: str, limit: int, scope: ClaimScope) -> ClaimRequest:
        owned = self._claim_filter(scope)
        return ClaimRequest(node_id, limit, owned, self._claim_now(), self._due_by(scope.ahead), sql=self.operations)

    def _single_claim_statement(self, conn: Connection, req: ClaimRequest, scope: ClaimScope) -> Any:
        """The statement a single-update strategy takes its rows with (after the read of one
        that reads first). It depends only on the request's named parameters: built once (per
        claim, the statements of a strategy that reads first were 8 % of a node's engine thread
        in a SQLite burst)."""
        return self._statement(f"claim/{scope.key}", lambda: self._claim_statement(self.strategy.take(conn, req)))

    def _claim_params(self, node_id: str, limit: int, scope: ClaimScope) -> dict[str, Any]:
        params: dict[str, Any] = {"claim_node": node_id, "claim_limit": limit}
        if scope.buckets is not None:
            params["owned_buckets"] = self.owned_mask(scope.buckets)
        if scope.ahead > 0:
            params["claim_ahead"] = scope.ahead
        if scope.steal_after is not None:
            params["steal_after"] = scope.steal_after
        if scope.one is not None:
            params["claim_namespace"] = scope.one
        return params

    def _claim_now(self) -> ColumnElement[Any]:
        # The expressions of a claim request are built once, like the statements made of them.
        return self._statement("claim/now", self.now_expr)

    def _due_by(self, ahead: float) -> ColumnElement[Any] | None:
        if ahead <= 0:
            return None
        return self._statement(
            f"claim/due_by/{ahead!r}",
            lambda: self._plus_seconds(self._claim_now(), bindparam("claim_ahead", ahead, type_=Float)),
        )

    #: Whether :meth:`_claim_statement` also inserts the run rows (each row carries ``run_id``).
    claim_records_runs: ClassVar[bool] = False

    def _claim_statement(self, take: Update) -> Any:
        """The statement that executes a strategy's ``take``, returning :data:`CLAIMED_COLUMNS`.
        A dialect that can also insert the running run rows in it (data-modifying CTEs) does so,
        returning each row's ``run_id`` (NULL: already recorded), and sets
        :attr:`claim_records_runs`."""
        return take.returning(*CLAIMED_COLUMNS)

    @transient_retry
    def next_due(
        self,
        *,
        buckets: Sequence[int] | None,
        steal_after: float | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> datetime | None:
        served = served_namespaces(namespaces)
        steal = applied_steal_after(buckets, steal_after)
        # Built once: the loop asks this whenever it has nothing in hand, several times a second.
        query = self._statement(
            f"next_due/{buckets is None}/{steal is not None}/{served}",
            lambda: select(*self._next_due_columns(buckets, steal, served)),
        )
        params = {} if buckets is None else {"owned_buckets": self.owned_mask(buckets)}
        with self._tx() as conn:
            row = conn.execute(query, params).one()
        return next_due_of(row[0], row[1] if steal is not None else None, steal)

    def _next_due_columns(
        self, buckets: Sequence[int] | None, steal: float | None, served: tuple[str, ...] | None
    ) -> list[Any]:
        """The earliest fire of ``buckets`` and, with ``steal`` (``steal_after`` as it applies),
        the earliest of any bucket already due: both minima in one round trip, each reading the
        due index from its start (:func:`next_due_of` combines them)."""
        only = namespace_filter(served, None)

        def earliest(owned: ColumnElement[bool] | None) -> Select[Any]:
            query = select(func.min(schedules.c.next_fire)).where(claimable())
            if only is not None:
                query = query.where(only)
            return query if owned is None else query.where(owned)

        columns = [earliest(self._owned(buckets)).scalar_subquery().label("next_owned")]
        if steal is not None:
            # Only a fire already due and still idle: its owners may be behind. One not yet due
            # is theirs to claim (ahead); counting it would wake this node for every such fire.
            late = earliest(None).where(schedules.c.next_fire <= self.now_expr())
            columns.append(late.scalar_subquery().label("next_late"))
        return columns

    @transient_retry
    def unclaim(self, node_id: str, claims: Sequence[Claim]) -> int:
        if not claims:
            return 0
        held = tuple_(schedules.c.id, schedules.c.claim_seq).in_([(c.schedule_id, c.claim_seq) for c in claims])
        with self._tx() as conn:
            release = update(schedules).where(held, schedules.c.state == "running").values(**UNHELD)
            if self.features.update_returning:
                released = set(conn.scalars(release.returning(schedules.c.id)))
            else:
                released = set(
                    conn.scalars(select(schedules.c.id).where(held, schedules.c.state == "running").with_for_update())
                )
                if released:
                    conn.execute(update(schedules).where(schedules.c.id.in_(released)).values(**UNHELD))
            run_ids = [c.run_id for c in claims if c.schedule_id in released and c.run_id is not None]
            if run_ids:
                conn.execute(delete(runs).where(runs.c.id.in_(run_ids), runs.c.status == "running"))
            if released:
                self._notify(conn)
        return len(released)


def next_due_of(owned: Any, late: Any, steal: float | None) -> datetime | None:
    """:meth:`Claiming.next_due`'s answer from its two minima: the earliest fire of the node's
    buckets, or a later-owned one already due, claimable once overdue by ``steal``."""
    owned_next = owned if isinstance(owned, datetime) else None
    if steal is None or not isinstance(late, datetime):
        return owned_next
    stealable_at = late + timedelta(seconds=steal)
    return stealable_at if owned_next is None else min(owned_next, stealable_at)
