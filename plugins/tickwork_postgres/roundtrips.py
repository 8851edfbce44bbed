"""The PostgreSQL store's batched statements on the hot path: the fenced start of held fires, the
batched ends, and a start window's round trip, which carries the takeover and the ends gathered
meanwhile in the start's own statement (docs/claim-protocol.md#start-windows)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    ColumnElement,
    CompoundSelect,
    Connection,
    DateTime,
    Select,
    Text,
    Update,
    any_,
    bindparam,
    cast,
    column,
    delete,
    func,
    literal,
    null,
    select,
    true,
    tuple_,
    type_coerce,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.selectable import CTE

from tickwork.sql.retry import transient_retry
from tickwork.sql.rounds import OneTransactionRound
from tickwork.sql.rows import UNHELD
from tickwork.sql.schema import UTCDateTime, runs, schedules
from tickwork.structures import Claim, Finish
from tickwork.structures import cap_error as cap


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def end_batch(finishes: Sequence[Finish]) -> str:
    """The ends of a batch as the one JSON document the end statement reads."""
    return json.dumps(
        [
            {
                "id": f.claim.schedule_id,
                "seq": f.claim.claim_seq,
                "next": _iso(f.next_fire),
                "run_id": f.claim.run_id,
                "status": f.outcome.status.value,
                "error": cap(f.outcome.error),
                "started": _iso(f.started_at),
                "finished": _iso(f.finished_at),
            }
            for f in finishes
        ]
    )


class PostgresRoundTrips(OneTransactionRound):
    """Fenced starts, batched ends, and both with the takeover in one statement."""

    def _fenced(self) -> ColumnElement[bool]:
        # Two arrays, not a list of pairs: one fixed statement (compiled once, prepared by
        # psycopg) whatever the number of fires; 400 pairs expanded into 800 parameters were
        # rendered and parsed anew at every start (docs/benchmarks.md#fenced-starts-at-1000-fires-at-once).
        pairs = (
            func.unnest(bindparam("s_ids", type_=ARRAY(BigInteger)), bindparam("s_seqs", type_=ARRAY(BigInteger)))
            .table_valued(column("id", BigInteger), column("seq", BigInteger))
            .render_derived(name="fence")
        )
        return tuple_(schedules.c.id, schedules.c.claim_seq).in_(select(pairs.c.id, pairs.c.seq))

    def _fence_params(self, claims: Sequence[Claim]) -> dict[str, Any]:
        return {"s_ids": [c.schedule_id for c in claims], "s_seqs": [c.claim_seq for c in claims]}

    def _started_cte(self) -> CTE:
        # The rows locked once (a materialized CTE), then updated by primary key. With the
        # locking read as the subquery of ``id IN``, PostgreSQL ran it again for every row it
        # updated (a nested loop: a start of N fires cost N^2, 200-460 ms for 400 fires of a
        # 1,000/s cluster, all of it lag). The locks make checking the condition again useless:
        # no other session can change a row this one holds until it commits.
        locked = self.operations.materialized(self._locked_ids(self._startable()).cte("startable"))
        return self._start_update(locked).cte("started")

    def _start_update(self, locked: CTE) -> Update:
        return (
            update(schedules)
            .where(schedules.c.id == locked.c.id)
            .values(claimed_at=self._started_at())
            .returning(schedules.c.id)
        )

    def _start_statement(self) -> Update:
        locked = self.operations.materialized(self._locked_ids(self._startable()).cte("startable"))
        return self._start_update(locked)

    def _release_and_end(self, conn: Connection, finishes: Sequence[Finish]) -> tuple[set[int], set[int]]:
        rows = conn.execute(
            self._statement("pg_release_and_end", self._release_and_end_statement), {"f_batch": end_batch(finishes)}
        ).all()
        self.statements += 1
        locked = {r.id for r in rows}
        busy = self.locked_elsewhere(conn, [f.claim.schedule_id for f in finishes if f.claim.schedule_id not in locked])
        return {r.id for r in rows if r.released}, busy

    def _end_ctes(self) -> tuple[CTE, CTE, CTE]:
        """The end statement's parts: the batch's rows this transaction could lock, those it
        released (fenced), and the runs ended where the release landed."""
        # WITH f AS (the batch as one JSON document, jsonb_to_recordset), released AS (fenced UPDATE
        # of the schedules RETURNING id), UPDATE runs FROM f JOIN released: one fixed statement
        # (compiled once, prepared by psycopg) and one round trip per batch, whatever its size. A
        # VALUES list was recompiled per batch (22 % of a node's CPU); release and run ends as two
        # statements cost a round trip more; seven parameter arrays cost 28-38 % more node CPU per
        # end than one document serialized by the json module's C encoder (benchmarks.md).
        rows = (
            func.jsonb_to_recordset(bindparam("f_batch", type_=Text).cast(JSONB))
            .table_valued(
                column("id", BigInteger),
                column("seq", BigInteger),
                column("next", DateTime(timezone=True)),
                column("run_id", BigInteger),
                column("status", Text),
                column("error", Text),
                column("started", DateTime(timezone=True)),
                column("finished", DateTime(timezone=True)),
            )
            .render_derived(name="r", with_types=True)
        )
        f = select(rows).cte("f")
        # The batch's rows this transaction could lock: one another session holds (a stray
        # FOR UPDATE, a long transaction) is passed over and written later, not waited for.
        # By primary key: ``id = ANY`` an array of the batch's ids. As ``id IN (SELECT ...)`` the
        # planner, guessing 100 rows for the document, hashed them and scanned the whole table,
        # dead row versions included (a schedule row gets three new versions per fire, and
        # autovacuum comes by seconds apart): 0.4 million rows read in a 10 s spread cell, a
        # third of the database's CPU in hash joins (perf; benchmarks.md).
        locked = (
            select(schedules.c.id)
            .where(schedules.c.id == any_(cast(select(func.array_agg(f.c.id)).scalar_subquery(), ARRAY(BigInteger))))
            .with_for_update(skip_locked=True)
            .cte("locked")
        )
        released = (
            update(schedules)
            .where(
                schedules.c.id == f.c.id,
                # By primary key: the locked ids as an array. And the state test spelled so that
                # it does not match the claims' partial index (``WHERE state = 'running'``): the
                # planner, its statistics taken while every schedule was idle, read every running
                # schedule through that index (800 of 1,000 in a spread cell) to release twenty.
                schedules.c.id == any_(cast(select(func.array_agg(locked.c.id)).scalar_subquery(), ARRAY(BigInteger))),
                schedules.c.claim_seq == f.c.seq,
                (schedules.c.state == "running").is_(true()),
            )
            .values(**self.release_values(type_coerce(f.c.next, UTCDateTime)))
            .returning(schedules.c.id)
            .cte("released")
        )
        ended = (
            update(runs)
            .where(runs.c.id == f.c.run_id, f.c.id == released.c.id)
            .values(
                status=f.c.status,
                error=f.c.error,
                finished_at=func.coalesce(type_coerce(f.c.finished, UTCDateTime), self.now_expr()),
                started_at=func.coalesce(type_coerce(f.c.started, UTCDateTime), runs.c.started_at),
            )
            .cte("ended")
        )
        return locked, released, ended

    def _release_and_end_statement(self) -> Select[Any]:
        locked, released, ended = self._end_ctes()
        return (
            select(locked.c.id, released.c.id.is_not(None).label("released"))
            .select_from(locked.outerjoin(released, released.c.id == locked.c.id))
            .add_cte(ended)
        )

    def _round_statement(self, take_over: bool, ends: bool) -> CompoundSelect[Any]:
        """One start window's statement: the fenced start, and with ``take_over`` the takeover
        (``t_grace``), with ``ends`` the batch of ends (``f_batch``). Its rows: ``kind`` names
        the part; ``started`` the ids started, ``taken`` the fires given back (id, the fence
        token, the name), ``ended`` the end batch's rows locked and whether each was released.

        PostgreSQL runs the data-modifying parts on one snapshot, and none can see another's
        writes, so each re-checks nothing the others change: they touch disjoint rows by
        their conditions on that snapshot (a start: this node's unstarted claims before their
        deadline; the takeover: unstarted claims past it, by the same clock and grace; an end:
        a claim that started, ``claimed_at >= next_fire``, or it would have no run to end)."""
        # The first part names the columns of the union.
        started = self._started_cte()
        parts: list[Select[Any]] = [
            select(
                literal("started", Text).label("kind"),
                started.c.id.label("id"),
                cast(null(), BigInteger).label("seq"),
                cast(null(), Text).label("name"),
                cast(null(), Boolean).label("released"),
            ).select_from(started)
        ]
        writes: list[CTE] = []
        if take_over:
            overdue = self.operations.materialized(self._locked_ids(self._overdue()).cte("overdue"))
            taken = (
                update(schedules)
                .where(schedules.c.id == overdue.c.id)
                .values(**UNHELD)
                .returning(schedules.c.id, schedules.c.claim_seq, schedules.c.name)
                .cte("taken")
            )
            # As Starting.forget_unstarted_runs: the given-back claims' run rows go, as if the
            # claims had never happened.
            writes.append(
                delete(runs)
                .where(
                    tuple_(runs.c.schedule_id, runs.c.claim_seq).in_(select(taken.c.id, taken.c.claim_seq)),
                    runs.c.status == "running",
                    runs.c.attempt == 1,
                    runs.c.started_at.is_(None),
                )
                .cte("forgotten")
            )
            parts.append(
                select(
                    literal("taken", Text), taken.c.id, taken.c.claim_seq, taken.c.name, cast(null(), Boolean)
                ).select_from(taken)
            )
        if ends:
            locked, released, ended = self._end_ctes()
            writes.append(ended)
            parts.append(
                select(
                    literal("ended", Text),
                    locked.c.id,
                    cast(null(), BigInteger),
                    cast(null(), Text),
                    released.c.id.is_not(None),
                ).select_from(locked.outerjoin(released, released.c.id == locked.c.id))
            )
        return union_all(*parts).add_cte(*writes)

    @transient_retry
    def _round_once(
        self,
        node_id: str,
        claims: Sequence[Claim],
        grace: float,
        lead: float,
        take_over: bool,
        finishes: Sequence[Finish],
    ) -> tuple[tuple[bool, ...], list[str], list[bool | None]]:
        params: dict[str, Any] = {**self._fence_params(claims), "s_node": node_id, "s_grace": grace, "s_lead": lead}
        if take_over:
            params["t_grace"] = grace
        if finishes:
            params["f_batch"] = end_batch(finishes)
        ends = bool(finishes)
        with self._tx() as conn:
            rows = conn.execute(
                self._statement(f"pg_round/{take_over}/{ends}", lambda: self._round_statement(take_over, ends)), params
            ).all()
            self.statements += 1
            started = {r.id for r in rows if r.kind == "started"}
            taken = [str(r.name) for r in rows if r.kind == "taken"]
            if taken:
                self._notify(conn)
            ended: list[bool | None] = []
            if finishes:
                locked = {r.id for r in rows if r.kind == "ended"}
                landed = {r.id for r in rows if r.kind == "ended" and r.released}
                busy = self.locked_elsewhere(
                    conn, [f.claim.schedule_id for f in finishes if f.claim.schedule_id not in locked]
                )
                ended = self._settle_ends(conn, node_id, finishes, landed, busy)
        return tuple(c.schedule_id in started for c in claims), taken, ended
