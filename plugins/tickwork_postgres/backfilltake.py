"""The PostgreSQL store's take of backfilled fires: set-based, a fixed number of round trips
however many schedules a take serves (docs/cluster.md#backfill, docs/claim-protocol.md).

The shared store (:mod:`tickwork.sql.backfilling`) takes schedule by schedule, about nine
statements each; here one ``SELECT ... FOR UPDATE`` locks the schedules chosen, and one statement
(data-modifying CTEs) counts their running runs, picks the queued fires their backfills' overlap
lets start, deletes those queue rows and records their runs. The decision is the same
(:func:`tickwork.structures.backfill_takeable`, spelt in window functions) and made by the
database's state under the same row locks: the second statement's snapshot is taken after the
locks are held, so it sees every run recorded or ended by a transaction that held one before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Integer,
    Select,
    and_,
    bindparam,
    case,
    delete,
    func,
    literal,
    or_,
    select,
    true,
    type_coerce,
)
from sqlalchemy.dialects import postgresql

from tickwork.sql.retry import transient_retry
from tickwork.sql.rows import spec_from_row
from tickwork.sql.schema import UTCDateTime, backfills, runs, schedules
from tickwork.sql.serverstore import ServerStore
from tickwork.structures import Claim, Finish, Overlap


class PostgresBackfills(ServerStore):
    """:meth:`take_backfills` in three round trips (lock, take, commit) plus one for carried ends."""

    @transient_retry
    def take_backfills(
        self,
        node_id: str,
        *,
        limit: int,
        buckets: Sequence[int] | None,
        namespaces: Sequence[str] | None = None,
        ends: Sequence[Finish] = (),
    ) -> list[Claim]:
        with self._tx() as conn:
            self._end_backfilled(conn, ends)
            if limit <= 0:
                return []
            waiting = self._waiting_backfills(limit, buckets, namespaces)
            # A schedule removed meanwhile is not returned (its queue rows went with it), nor
            # one whose row another transaction holds locked: another node's take (it takes
            # those fires) or another session's (a stray SELECT ... FOR UPDATE), whose fires wait
            # for the next take, about a second later. Waiting instead held up the node's loop
            # for lock_timeout, past the start deadline of the fires it had claimed ahead.
            locked = conn.execute(
                select(schedules)
                .where(schedules.c.id.in_(waiting.correlate(None).scalar_subquery()))
                .order_by(schedules.c.id)
                .with_for_update(of=schedules, skip_locked=True)
            ).all()
            if not locked:
                return []
            rows = {int(row.id): (row.claim_seq, spec_from_row(row._mapping)) for row in locked}
            taken = conn.execute(
                self._statement("pg_backfill_take", self._take_statement),
                {
                    "b_ids": list(rows),
                    "b_max": [spec.max_concurrent for _, spec in rows.values()],
                    "b_limit": limit,
                    "b_node": node_id,
                },
            ).all()
        claims: list[Claim] = []
        for t in taken:
            claim_seq, spec = rows[int(t.schedule_id)]
            claims.append(
                Claim(
                    int(t.schedule_id),
                    spec,
                    t.scheduled_for,
                    claim_seq,
                    t.started_at,
                    int(t.id),
                    int(t.attempt),
                    backfill_overlap=t.overlap,
                )
            )
        return claims

    def _take_statement(self) -> Select[Any]:
        """Of the locked schedules ``b_ids``: up to ``b_limit`` queued fires that may start now,
        earliest first, each deleted from the queue and recorded as a ``running`` run of
        ``b_node``; returns the runs opened with their fires' overlap."""
        now = self.now_expr()
        # The start is the clock as the row is written (clock_timestamp(), not the statement's
        # start): an end this statement's snapshot saw committed before it was taken, so a
        # buffered fire never starts before its predecessor's recorded end.
        started = now if self.clock is not None else type_coerce(func.clock_timestamp(), UTCDateTime)
        # The locked schedules with their max_concurrent (held in the options document: read
        # from the locked rows by the caller, bound as a second array).
        given = (
            func.unnest(
                bindparam("b_ids", type_=ARRAY(BigInteger)),
                bindparam("b_max", type_=ARRAY(Integer)),
            )
            .table_valued("sid", "m")
            .render_derived(name="given")
        )
        running = (
            select(func.count())
            .select_from(runs)
            .where(runs.c.schedule_id == given.c.sid, runs.c.status == "running")
            .scalar_subquery()
        )
        locked = (
            select(
                given.c.sid,
                given.c.m,
                schedules.c.version.label("version"),
                running.label("running"),
            )
            .join_from(given, schedules, schedules.c.id == given.c.sid)
            .cte("locked")
        )
        limit = bindparam("b_limit", type_=Integer)
        # Per schedule its earliest queued fires due (never early), at most the take's limit.
        queued = (
            select(backfills.c.id, backfills.c.scheduled_for, backfills.c.overlap)
            .where(backfills.c.schedule_id == locked.c.sid, backfills.c.scheduled_for <= now)
            .order_by(backfills.c.scheduled_for, backfills.c.id)
            .limit(limit)
            .lateral("queued")
        )
        order = (queued.c.scheduled_for, queued.c.id)
        place = func.row_number().over(partition_by=locked.c.sid, order_by=order) - 1
        ranked = (
            select(
                queued.c.id,
                locked.c.sid,
                queued.c.scheduled_for,
                queued.c.overlap,
                locked.c.running,
                locked.c.m,
                place.label("j"),
            )
            .select_from(locked.join(queued, true()))
            .cte("ranked")
        )
        # backfill_takeable: the j-th queued fire (0-based) starts beside running + j runs; an
        # allow fire while that is under max_concurrent (unset: always), a buffer_all fire only
        # when it is 0 (alone), and nothing after a buffer_all fire. Fire-time order is kept:
        # the first fire that must wait stops its schedule's take (bool_and over the prefix).
        allow = ranked.c.overlap == Overlap.ALLOW.value
        active = ranked.c.running + ranked.c.j
        fits = or_(and_(allow, or_(ranked.c.m.is_(None), active < ranked.c.m)), and_(~allow, active == 0))
        part, order = ranked.c.sid, (ranked.c.scheduled_for, ranked.c.id)
        prefix_fits = func.bool_and(fits).over(partition_by=part, order_by=order, rows=(None, 0))
        before = func.sum(case((~allow, 1), else_=0)).over(partition_by=part, order_by=order, rows=(None, -1))
        alone_before = func.coalesce(before, 0)
        judged = select(
            ranked.c.id, ranked.c.sid, ranked.c.scheduled_for, prefix_fits.label("fits"), alone_before.label("alone")
        ).cte("judged")
        picked = (
            select(judged.c.id)
            .where(judged.c.fits, judged.c.alone == 0)
            .order_by(judged.c.scheduled_for, judged.c.sid, judged.c.id)
            .limit(limit)
        )
        # The delete decides between takers: a row another transaction deleted meanwhile (a
        # cancel) is waited for and not returned, so its fire is not recorded.
        gone = (
            delete(backfills)
            .where(backfills.c.id.in_(picked))
            .returning(*(backfills.c[c] for c in ("id", "schedule_id", "scheduled_for", "rerun", "overlap")))
            .cte("gone")
        )
        # The attempt: 1 when the history holds none of the fire, the next after a skipped one
        # (or any with rerun); a fire that ran meanwhile is dropped (its queue row deleted).
        history = (
            select(
                gone.c.id,
                func.max(runs.c.attempt).label("last"),
                func.sum(case((runs.c.status != "skipped", 1), else_=0)).label("ran"),
            )
            .select_from(
                gone.outerjoin(
                    runs, and_(runs.c.schedule_id == gone.c.schedule_id, runs.c.scheduled_for == gone.c.scheduled_for)
                )
            )
            .group_by(gone.c.id)
            .cte("history")
        )
        source = (
            select(
                gone.c.schedule_id,
                gone.c.scheduled_for,
                func.coalesce(history.c.last, 0) + 1,
                bindparam("b_node"),
                started,
                literal("running"),
                locked.c.version,
            )
            .join_from(gone, history, history.c.id == gone.c.id)
            .join(locked, locked.c.sid == gone.c.schedule_id)
            .where(or_(history.c.last.is_(None), func.coalesce(history.c.ran, 0) == 0, gone.c.rerun))
        )
        columns = ["schedule_id", "scheduled_for", "attempt", "node", "started_at", "status", "version"]
        opened = (
            postgresql.insert(runs)
            .from_select(columns, source)
            # A fire recorded meanwhile (its regular run) is skipped: no row comes back.
            .on_conflict_do_nothing()
            .returning(runs.c.id, runs.c.schedule_id, runs.c.scheduled_for, runs.c.attempt, runs.c.started_at)
            .cte("opened")
        )
        return (
            select(
                opened.c.id,
                opened.c.schedule_id,
                opened.c.scheduled_for,
                opened.c.attempt,
                opened.c.started_at,
                gone.c.overlap,
            )
            .join_from(
                opened,
                gone,
                and_(gone.c.schedule_id == opened.c.schedule_id, gone.c.scheduled_for == opened.c.scheduled_for),
            )
            .order_by(opened.c.scheduled_for, opened.c.schedule_id)
        )
